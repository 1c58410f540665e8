"""Bad input is a clear ``InvalidArgument`` (or the spec's error), never a crash and never a
partial write."""

from __future__ import annotations

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, errors, testing


@pytest.fixture
def mq(engine: mqlite.EmbeddedClient) -> mqlite.EmbeddedClient:
    engine.create_queue("q")
    return engine


@pytest.mark.parametrize(
    "config",
    [
        QueueConfig(ordering_mode="fifo"),
        QueueConfig(kind="topic"),
        QueueConfig(lock_duration_ms=-1),
        QueueConfig(max_delivery_count=-5),
        QueueConfig(default_ttl_ms=-1),
        QueueConfig(dedup_window_ms=-1),
        QueueConfig(lock_duration_ms=1 << 70),
        QueueConfig(lock_duration_ms="30s"),  # type: ignore[arg-type]
        QueueConfig(dead_letter_on_expire=1),  # type: ignore[arg-type]
    ],
)
def test_bad_queue_config_is_invalid_argument(
    mq: mqlite.EmbeddedClient, config: QueueConfig
) -> None:
    with pytest.raises(errors.InvalidArgument):
        mq.create_queue("other", config)
    assert [q.name for q in mq.list_queues()] == ["q"]


@pytest.mark.parametrize("name", ["", "x" * 300, "a\nb", None, 42])
def test_bad_queue_names(mq: mqlite.EmbeddedClient, name: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        mq.create_queue(name)  # type: ignore[arg-type]


def test_zero_lock_and_delivery_count_take_the_defaults(mq: mqlite.EmbeddedClient) -> None:
    info = mq.create_queue("z", QueueConfig(lock_duration_ms=0, max_delivery_count=0))
    assert info.config.lock_duration_ms == 30_000
    assert info.config.max_delivery_count == 10


def test_negative_dlq_bounds_mean_unbounded(mq: mqlite.EmbeddedClient) -> None:
    info = mq.create_queue("z", QueueConfig(dlq_max_age_ms=-7, dlq_max_count=-1, dlq_max_bytes=0))
    assert (info.config.dlq_max_age_ms, info.config.dlq_max_count, info.config.dlq_max_bytes) == (
        -1,
        -1,
        0,
    )


@pytest.mark.parametrize(
    "messages",
    [
        [OutMessage(body="text")],  # type: ignore[arg-type]
        [OutMessage(body=b"x", properties={"k": 1})],  # type: ignore[dict-item]
        [OutMessage(body=b"x", group_id=None)],  # type: ignore[arg-type]
        ["not a message"],
        OutMessage(body=b"x"),
    ],
)
def test_bad_messages_write_nothing(mq: mqlite.EmbeddedClient, messages: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        mq.send(
            "q", [OutMessage(body=b"ok"), *messages] if isinstance(messages, list) else messages
        )  # type: ignore[arg-type]
    assert mq.stats("q").total == 0


def test_body_over_the_cap_fails_the_whole_batch(db_path: object, clock: object) -> None:
    mq = mqlite.open_embedded(":memory:", background=False, max_message_bytes=10)
    try:
        mq.create_queue("q")
        assert mq.send_one("q", OutMessage(body=b"x" * 10)) > 0  # equal to the cap is fine
        with pytest.raises(errors.MessageTooLarge):
            mq.send("q", [OutMessage(body=b"a"), OutMessage(body=b"x" * 11)])
        assert mq.stats("q").total == 1
    finally:
        mq.close()


def test_send_to_unknown_queue_is_not_found(mq: mqlite.EmbeddedClient) -> None:
    with pytest.raises(errors.QueueNotFound):
        mq.send_one("nope", OutMessage(body=b"x"))


def test_empty_batch_returns_empty_list(mq: mqlite.EmbeddedClient) -> None:
    assert mq.send("q", []) == []


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"mode": "peek"}, errors.InvalidArgument),
        ({"max_messages": "10"}, errors.InvalidArgument),
        ({"wait_ms": 1.5}, errors.InvalidArgument),
        ({"attempt_id": ""}, errors.InvalidArgument),
        ({"attempt_id": "a" * 300}, errors.InvalidArgument),
    ],
)
def test_bad_receive_arguments(
    mq: mqlite.EmbeddedClient, kwargs: dict[str, object], error: type
) -> None:
    with pytest.raises(error):
        mq.receive("q", **kwargs)  # type: ignore[arg-type]


def test_receive_limits_are_clamped(mq: mqlite.EmbeddedClient) -> None:
    mq.send("q", [OutMessage(body=b"x")] * 300)
    assert len(mq.receive("q", max_messages=0)) == 1
    assert len(mq.receive("q", max_messages=10_000)) == 256


@pytest.mark.parametrize("seq", [0, -1, "1", None, True])
def test_bad_seq_numbers(mq: mqlite.EmbeddedClient, seq: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        mq.complete("q", seq, "t")  # type: ignore[arg-type]


def test_negative_ttl_and_past_schedule(mq: mqlite.EmbeddedClient, clock: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        mq.send("q", [OutMessage(body=b"x")], ttl_ms=-1)
    now = testing.engine(mq).now_ms()
    with pytest.raises(errors.InvalidArgument, match="not in the future"):
        mq.schedule("q", [OutMessage(body=b"x")], at_ms=now)
    assert mq.stats("q").total == 0


@pytest.mark.parametrize("kwargs", [{"max": -1}, {"older_than_ms": -1}, {"rate_per_sec": -1}])
def test_negative_redrive_bounds(mq: mqlite.EmbeddedClient, kwargs: dict[str, int]) -> None:
    with pytest.raises(errors.InvalidArgument):
        mq.redrive("q", **kwargs)


def test_peek_unknown_state_is_invalid(mq: mqlite.EmbeddedClient) -> None:
    with pytest.raises(errors.InvalidArgument):
        mq.peek("q", state="completed-ish")


def test_renew_batch_over_512_is_invalid(mq: mqlite.EmbeddedClient) -> None:
    with pytest.raises(errors.InvalidArgument, match="512"):
        mq.renew_batch("q", [(i, "t") for i in range(1, 514)])


def test_malformed_batch_pairs(mq: mqlite.EmbeddedClient) -> None:
    with pytest.raises(errors.InvalidArgument):
        mq.complete_batch("q", [(1, "t", "extra")])  # type: ignore[list-item]
    with pytest.raises(errors.InvalidArgument):
        mq.complete_batch("q", "1,t")  # type: ignore[arg-type]


def test_every_error_has_a_wire_code_and_status() -> None:
    for cls in errors.BY_CODE.values():
        assert cls.code and 400 <= cls.http_status < 600
    assert errors.BY_CODE["lock_lost"] is errors.LockLost
    assert errors.BY_CODE["already_exists"] is errors.DedupConflict
    assert issubclass(errors.QueueNotFound, errors.NotFound)
    assert str(errors.LockLost()).startswith("lock lost")

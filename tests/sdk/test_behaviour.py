"""One behaviour suite, run against the embedded client and the HTTP client alike: the
same calls must give the same results and raise the same exception classes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, errors, wire
from mqlite.types import BatchResult, FilterTestResult, Stats

Names = Callable[..., str]


def wire_view(info: mqlite.QueueInfo) -> tuple[Any, ...]:
    """The QueueInfo fields ListQueues carries (both clients report these)."""
    c = info.config
    return (
        info.name,
        c.kind,
        c.lock_duration_ms,
        c.max_delivery_count,
        c.default_ttl_ms,
        c.dedup_window_ms,
        bool(info.generation),
    )


def test_is_a_client(mq: Any) -> None:
    assert isinstance(mq, mqlite.Client)


# -- queues ------------------------------------------------------------------------------


def test_create_queue_returns_the_full_config(mq: Any, names: Names) -> None:
    q = names()
    cfg = QueueConfig(lock_duration_ms=0, max_delivery_count=3, ordering_mode="group_fifo")
    info = mq.create_queue(q, cfg)
    assert info.name == q and info.generation
    assert info.config == QueueConfig(
        lock_duration_ms=30_000, max_delivery_count=3, ordering_mode="group_fifo"
    )
    listed = [x for x in mq.list_queues() if x.name == q]
    assert [wire_view(x) for x in listed] == [wire_view(info)]
    assert mq.get_queue(q).generation == info.generation


def test_ensure_queue_never_resets_an_existing_queue(mq: Any, names: Names) -> None:
    """Issue 31: the start-up verb leaves a configured queue alone, same on both clients."""
    q = names()
    fifo = QueueConfig(ordering_mode="strict_fifo", dedup_window_ms=600_000)
    made = mq.ensure_queue(q, fifo)
    assert made.created and made.differs == () and made.queue.generation
    found = mq.ensure_queue(q)
    assert (found.created, found.differs) == (False, ("dedup_window_ms", "ordering_mode"))
    assert found.queue.config == made.queue.config == mq.get_queue(q).config
    assert found.queue.config.ordering_mode == "strict_fifo"
    with pytest.raises(errors.QueueConfigDiffers):
        mq.ensure_queue(q, QueueConfig(), strict=True)
    assert mq.ensure_queue(q, fifo, strict=True).differs == ()


def test_ensure_queue_on_the_asyncio_client(broker: Any, names: Names) -> None:
    import asyncio

    import mqlite.aio

    async def main() -> None:
        async with mqlite.aio.connect(broker.url, broker.token) as mq:
            q = names()
            await mq.create_queue(q, QueueConfig(dedup_window_ms=60_000))
            found = await mq.ensure_queue(q)
            assert (found.created, found.differs) == (False, ("dedup_window_ms",))
            assert (await mq.get_queue(q)).config.dedup_window_ms == 60_000

    asyncio.run(main())


def test_delete_queue_fences_on_generation(mq: Any, names: Names) -> None:
    q = names()
    old = mq.create_queue(q).generation
    mq.delete_queue(q)
    with pytest.raises(errors.QueueNotFound):
        mq.delete_queue(q)
    mq.create_queue(q)
    with pytest.raises(errors.QueueChanged):
        mq.delete_queue(q, old)
    mq.send_one(q, OutMessage(b"x"))
    with pytest.raises(errors.QueueNotEmpty):
        mq.delete_queue(q)
    assert q in [x.name for x in mq.list_queues()]


def test_unknown_queue_is_queue_not_found_everywhere(mq: Any, names: Names) -> None:
    q = names("missing")
    for call in (
        lambda: mq.stats(q),
        lambda: mq.peek(q),
        lambda: mq.receive(q),
        lambda: mq.send_one(q, OutMessage(b"x")),
        lambda: mq.get_queue(q),
        lambda: mq.cancel(q, 1),
    ):
        with pytest.raises(errors.QueueNotFound):
            call()


def test_invalid_arguments(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q)
    bad: list[Callable[[], object]] = [
        lambda: mq.create_queue(q, QueueConfig(ordering_mode="sideways")),
        lambda: mq.create_queue(""),
        lambda: mq.receive(q, mode="bogus"),
        lambda: mq.receive(q, attempt_id=""),
        lambda: mq.peek(q, state="nope"),
        lambda: mq.send_one(q, b"not an OutMessage"),  # type: ignore[arg-type]
        lambda: mq.schedule(q, [OutMessage(b"x")], at_ms=0),
        lambda: mq.subscribe(names("t"), names("s"), "this is (not valid"),
        lambda: mq.renew_batch(q, [(1, "t")] * 513),
        lambda: mq.create_key("not-hex", "k", ["send"]),
        lambda: mq.list_keys(sort="sideways"),
    ]
    for call in bad:
        with pytest.raises(errors.InvalidArgument):
            call()


# -- send / receive / settle -------------------------------------------------------------


def test_round_trip_with_bound_settlement(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q)
    out = OutMessage(
        b"\x00body\xff",
        message_id="m-1",
        group_id="g",
        subject="a.b",
        correlation_id="c",
        reply_to="r",
        content_type="application/octet-stream",
        properties={"k": "v"},
    )
    seq = mq.send_one(q, out)
    [m] = mq.receive(q, max_messages=10)
    assert (m.seq_number, m.queue, m.body, m.message_id, m.group_id, m.subject) == (
        seq,
        q,
        out.body,
        "m-1",
        "g",
        "a.b",
    )
    assert (m.correlation_id, m.reply_to, m.content_type, m.properties) == (
        "c",
        "r",
        "application/octet-stream",
        {"k": "v"},
    )
    assert m.delivery_count == 1 and m.lock_token and m.locked_until_ms > m.enqueued_at_ms
    assert (m.state, m.visible_at_ms, m.expires_at_ms) == ("", 0, 0)
    m.renew()  # bound renew
    m.complete()
    m.complete()  # an exact replay of a committed settlement succeeds (receipt)
    with pytest.raises(errors.LockLost):
        m.abandon()
    assert mq.stats(q) == Stats(q)


def test_settlement_verbs(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q)
    seqs = mq.send(q, [OutMessage(b"a"), OutMessage(b"b"), OutMessage(b"c")])
    assert len(seqs) == 3 and seqs == sorted(seqs)
    a, b, c = mq.receive(q, max_messages=3)
    a.abandon()
    b.reject("Bad", "very bad")
    c.defer()
    st = mq.stats(q)
    assert (st.active, st.dead_lettered, st.deferred, st.total) == (1, 1, 1, 3)
    [dl] = mq.peek(q, state="dead_lettered")
    assert (dl.seq_number, dl.state, dl.dead_letter_reason, dl.dead_letter_description) == (
        b.seq_number,
        "dead_lettered",
        "Bad",
        "very bad",
    )
    assert dl.queue == q and not dl.lock_token
    [d] = mq.receive_deferred(q, [c.seq_number])
    assert d.seq_number == c.seq_number and d.lock_token
    d.complete()
    [again] = mq.receive(q)
    assert again.seq_number == a.seq_number and again.delivery_count == 2
    res = mq.complete_batch(q, [(again.seq_number, again.lock_token), (999_999_999, "x")])
    assert res == [BatchResult(again.seq_number, True), BatchResult(999_999_999, False)]
    assert mq.redrive(q) == 1
    [back] = mq.receive(q)
    back.reject()
    assert mq.purge(q) == 1
    assert mq.stats(q).total == 0


def test_wrong_token_is_lock_lost(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q)
    seq = mq.send_one(q, OutMessage(b"x"))
    [m] = mq.receive(q)
    for call in (
        lambda: mq.complete(q, seq, "wrong"),
        lambda: mq.abandon(q, seq, "wrong"),
        lambda: mq.reject(q, seq, "wrong"),
        lambda: mq.defer(q, seq, "wrong"),
        lambda: mq.renew(q, seq, "wrong"),
        lambda: mq.renew(q, seq, ""),
    ):
        with pytest.raises(errors.LockLost):
            call()
    assert mq.renew(q, seq, m.lock_token) >= m.locked_until_ms
    [r] = mq.renew_batch(q, [(seq, m.lock_token)])
    assert r.ok and r.locked_until_ms >= m.locked_until_ms
    assert mq.renew_batch(q, [(seq, "wrong")]) == [BatchResult(seq, False)]


def test_receive_attempt_id_replays_the_same_batch(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q)
    mq.send(q, [OutMessage(b"1"), OutMessage(b"2")])
    first = mq.receive(q, max_messages=2, attempt_id="attempt-1")
    again = mq.receive(q, max_messages=2, attempt_id="attempt-1")
    assert [(m.seq_number, m.lock_token) for m in again] == [
        (m.seq_number, m.lock_token) for m in first
    ]
    assert mq.receive(q, attempt_id="attempt-2") == []


def test_receive_and_delete_holds_no_lock(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q)
    mq.send_one(q, OutMessage(b"x"))
    [m] = mq.receive(q, mode="receive_and_delete")
    assert (m.body, m.lock_token, m.locked_until_ms) == (b"x", "", 0)
    with pytest.raises(errors.InvalidArgument):
        m.complete()
    assert mq.stats(q).total == 0


def test_empty_receive_and_empty_send(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q)
    assert mq.receive(q, wait_ms=50) == []
    assert mq.send(q, []) == []


def test_dedup(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q, QueueConfig(dedup_window_ms=60_000))
    seq = mq.send_one(q, OutMessage(b"a", message_id="id"))
    assert mq.send_one(q, OutMessage(b"a", message_id="id")) == seq
    with pytest.raises(errors.DedupConflict):
        mq.send_one(q, OutMessage(b"different", message_id="id"))
    assert mq.send(q, [OutMessage(b"other", message_id="id"), OutMessage(b"z")])[0] == 0


def test_group_required(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q, QueueConfig(ordering_mode="group_fifo"))
    with pytest.raises(errors.GroupRequired):
        mq.send_one(q, OutMessage(b"x"))
    assert mq.send_one(q, OutMessage(b"x", group_id="g")) > 0


def test_message_too_large(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q)
    with pytest.raises(errors.MessageTooLarge):
        mq.send_one(q, OutMessage(b"x" * (1024 * 1024 + 1)))
    assert mq.send_one(q, OutMessage(b"x" * 1024 * 1024)) > 0


def test_schedule_and_cancel(mq: Any, names: Names) -> None:
    q = names()
    mq.create_queue(q)
    at = 4_000_000_000_000  # far in the future on either clock
    [seq] = mq.schedule(q, [OutMessage(b"later")], at_ms=at)
    [p] = mq.peek(q, state="scheduled")
    assert (p.seq_number, p.visible_at_ms) == (seq, at)
    assert mq.receive(q) == []
    mq.cancel(q, seq)
    with pytest.raises(errors.NotFound):
        mq.cancel(q, seq)
    with pytest.raises(errors.InvalidArgument):
        mq.schedule(q, [OutMessage(b"past")], at_ms=1)


# -- topics --------------------------------------------------------------------------------


def test_topics_fan_out_and_filters(mq: Any, names: Names) -> None:
    topic, hot, all_ = names("topic"), names("hot"), names("all")
    info = mq.subscribe(topic, hot, 'subject == "hot"')
    assert (info.name, info.kind) == (hot, "subscription")
    mq.subscribe(topic, all_)
    subs = [s for s in mq.list_subscriptions() if s.topic == topic]
    assert sorted((s.name, s.expr) for s in subs) == sorted([(hot, 'subject == "hot"'), (all_, "")])
    mq.send(topic, [OutMessage(b"1", subject="hot"), OutMessage(b"2", subject="cold")])
    assert [m.body for m in mq.peek(hot)] == [b"1"]
    assert [m.body for m in mq.peek(all_)] == [b"1", b"2"]
    [m] = mq.receive(hot)
    assert m.queue == hot
    m.complete()
    with pytest.raises(errors.NameConflict):
        mq.create_queue(topic)
    with pytest.raises(errors.NameConflict):
        mq.subscribe(topic, topic)
    mq.unsubscribe(topic, hot)
    with pytest.raises(errors.NotFound):
        mq.unsubscribe(topic, hot)


def test_test_filter(mq: Any) -> None:
    assert mq.test_filter('subject == "a"') == FilterTestResult(True)
    sample = OutMessage(b"{}", subject="a")
    assert mq.test_filter('subject == "a"', sample) == FilterTestResult(True, "", True, True)
    bad = mq.test_filter("(((")
    assert not bad.valid and bad.error


# -- status and keys -----------------------------------------------------------------------


def test_status_is_the_same_type(mq: Any, embedded: mqlite.EmbeddedClient) -> None:
    st = mq.status()
    assert isinstance(st, wire.StatusResponse)
    assert st.version == mqlite.__version__ and st.backend == "local file"
    assert st.schema_version and st.ping_ms >= 0 and st.db_size_bytes > 0
    assert st.auth is (mq is not embedded)


def test_key_management(mq: Any) -> None:
    key_id = mqlite.generate_key_id()
    key, token = mq.create_key(key_id, "producer", ["send"])
    assert (key.id, key.name, key.permissions, key.revoked_at_ms) == (
        key_id,
        "producer",
        ("send",),
        0,
    )
    assert token.startswith("mqk_") and len(token) == 68
    with pytest.raises(errors.KeyConflict):
        mq.create_key(key_id, "again", ["listen"])
    keys, cursor = mq.list_keys(limit=1000)
    assert key in keys and cursor == ""
    mq.revoke_key(key_id)
    mq.revoke_key(key_id)  # revoking again succeeds
    [listed] = [k for k in mq.list_keys(limit=1000)[0] if k.id == key_id]
    assert listed.revoked_at_ms > 0
    with pytest.raises(errors.NotFound):
        mq.revoke_key(mqlite.generate_key_id())


def test_closed_client_raises_closed(mq: Any) -> None:
    mq.close()
    with pytest.raises(errors.Closed):
        mq.list_queues()

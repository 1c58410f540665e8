"""Every batch and every stored string is bounded (docs/http.md "Limits"): a call over a
limit is InvalidArgument naming the limit, and nothing of it is written."""

from __future__ import annotations

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, defaults, errors


def test_send_of_an_empty_batch_still_validates_the_name(engine: mqlite.EmbeddedClient) -> None:
    with pytest.raises(errors.QueueNotFound):
        engine.send("no-such-queue", [])
    with pytest.raises(errors.InvalidArgument):
        engine.send("", [])
    engine.create_queue("q")
    assert engine.send("q", []) == []


def test_messages_per_send_are_capped(engine: mqlite.EmbeddedClient) -> None:
    engine.create_queue("q")
    too_many = [OutMessage(b"x")] * (defaults.MAX_SEND_MESSAGES + 1)
    with pytest.raises(errors.InvalidArgument, match=str(defaults.MAX_SEND_MESSAGES)):
        engine.send("q", too_many)
    assert engine.stats("q").total == 0
    assert len(engine.send("q", too_many[:-1])) == defaults.MAX_SEND_MESSAGES


def test_fanout_product_is_capped_before_anything_is_written(
    engine: mqlite.EmbeddedClient,
) -> None:
    subs = 11
    for i in range(subs):
        engine.subscribe("t", f"s{i}")
    per_call = defaults.MAX_FANOUT_ROWS // subs
    with pytest.raises(errors.InvalidArgument, match="copies in one call"):
        engine.send("t", [OutMessage(b"x")] * (per_call + 1))
    assert all(engine.stats(f"s{i}").total == 0 for i in range(subs))
    engine.send("t", [OutMessage(b"x")] * per_call)
    assert engine.stats("s0").total == per_call


def test_complete_batch_items_are_capped(engine: mqlite.EmbeddedClient) -> None:
    engine.create_queue("q")
    items = [(1, "t")] * (defaults.MAX_SETTLE_BATCH + 1)
    with pytest.raises(errors.InvalidArgument, match=str(defaults.MAX_SETTLE_BATCH)):
        engine.complete_batch("q", items)


@pytest.mark.parametrize(
    "field", ["message_id", "group_id", "subject", "correlation_id", "reply_to", "content_type"]
)
def test_each_string_field_is_bounded(engine: mqlite.EmbeddedClient, field: str) -> None:
    engine.create_queue("q")
    ok = OutMessage(b"x", **{field: "a" * defaults.MAX_FIELD_BYTES})
    engine.send_one("q", ok)
    with pytest.raises(errors.InvalidArgument, match=f"{field} is {defaults.MAX_FIELD_BYTES + 1}"):
        engine.send_one("q", OutMessage(b"x", **{field: "a" * (defaults.MAX_FIELD_BYTES + 1)}))


def test_field_bound_counts_utf8_bytes_not_characters(engine: mqlite.EmbeddedClient) -> None:
    engine.create_queue("q")
    euro = "€" * (defaults.MAX_FIELD_BYTES // 3 + 1)  # 3 bytes each in UTF-8
    with pytest.raises(errors.InvalidArgument, match="bytes"):
        engine.send_one("q", OutMessage(b"x", subject=euro))


def test_property_count_and_total_metadata_are_bounded(engine: mqlite.EmbeddedClient) -> None:
    engine.create_queue("q")
    many = {f"k{i}": "v" for i in range(defaults.MAX_PROPERTIES + 1)}
    with pytest.raises(errors.InvalidArgument, match=f"at most {defaults.MAX_PROPERTIES}"):
        engine.send_one("q", OutMessage(b"x", properties=many))
    big = {f"k{i}": "v" * 400 for i in range(200)}  # each value fits; the total does not
    with pytest.raises(errors.InvalidArgument, match="bytes of metadata"):
        engine.send_one("q", OutMessage(b"x", properties=big))
    assert engine.stats("q").total == 0


def test_a_topic_publish_with_filters_commits_like_a_plain_send(
    engine: mqlite.EmbeddedClient,
) -> None:
    """Routing (filters) happens before the write transaction; the rows are the same."""
    engine.subscribe("t", "even", "properties['n'] in ['0', '2']")
    engine.subscribe("t", "all")
    engine.create_queue("all", QueueConfig(kind="subscription", dedup_window_ms=60_000))
    msgs = [
        OutMessage(str(i).encode(), message_id=str(i), properties={"n": str(i)}) for i in range(3)
    ]
    seqs = engine.send("t", msgs)
    assert len(seqs) == 3 and all(seqs)
    assert sorted(m.body for m in engine.peek("even")) == [b"0", b"2"]
    assert sorted(m.body for m in engine.peek("all")) == [b"0", b"1", b"2"]
    engine.send("t", msgs[:1])  # deduplicated in "all"; "even" (no dedup) takes a copy
    assert engine.stats("all").total == 3
    assert engine.stats("even").total == 3

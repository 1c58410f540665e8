"""Conformance §4: deduplication (window anchored at the first accepted send, keyed per
queue by message_id or the body's sha256, compares the body only, outlives the message)."""

from __future__ import annotations

import pytest
from conformance_support import counts, peek_all, seqs

from mqlite import OutMessage, defaults, errors
from mqlite.testing import run_maintenance_once

WINDOW = 10_000


def test_4_1_repeat_message_id_within_window_is_one_enqueue(mq, make_queue, clock):
    q = make_queue(dedup_window_ms=WINDOW)
    first = mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    clock.advance(1_000)
    again = mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    assert again == first
    assert mq.stats(q).total == 1
    assert seqs(mq.receive(q, max_messages=10)) == [first]


def test_4_1_empty_message_id_keys_on_body_sha256(mq, make_queue):
    q = make_queue(dedup_window_ms=WINDOW)
    a = mq.send_one(q, OutMessage(body=b"same"))
    b = mq.send_one(q, OutMessage(body=b"same"))
    c = mq.send_one(q, OutMessage(body=b"different"))
    assert a == b
    assert c != a
    assert mq.stats(q).total == 2


def test_4_1_duplicate_compares_body_only_not_metadata(mq, make_queue):
    q = make_queue(dedup_window_ms=WINDOW)
    a = mq.send_one(q, OutMessage(body=b"x", message_id="m1", properties={"v": "1"}))
    b = mq.send_one(
        q, OutMessage(body=b"x", message_id="m1", properties={"v": "2"}, subject="other")
    )
    assert a == b
    (m,) = peek_all(mq, q)
    assert m.properties == {"v": "1"}


def test_4_1_window_is_anchored_at_the_first_accepted_send(mq, make_queue, clock):
    q = make_queue(dedup_window_ms=WINDOW)
    first = mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    clock.advance(6_000)
    assert mq.send_one(q, OutMessage(body=b"x", message_id="m1")) == first
    clock.advance(WINDOW - 6_000 - 1)  # first + window - 1: still inside
    assert mq.send_one(q, OutMessage(body=b"x", message_id="m1")) == first
    clock.advance(1)  # first + window: outside (not refreshed by the duplicates)
    fresh = mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    assert fresh > first
    assert mq.stats(q).total == 2
    clock.advance(1)
    assert mq.send_one(q, OutMessage(body=b"x", message_id="m1")) == fresh


def test_4_1_out_of_window_different_body_is_accepted(mq, make_queue, clock):
    q = make_queue(dedup_window_ms=WINDOW)
    first = mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    clock.advance(WINDOW)
    second = mq.send_one(q, OutMessage(body=b"y", message_id="m1"))
    assert second > first


def test_4_1_dedup_is_off_by_default(mq, make_queue):
    q = make_queue()
    a = mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    b = mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    c = mq.send_one(q, OutMessage(body=b"y", message_id="m1"))
    assert len({a, b, c}) == 3
    assert mq.stats(q).total == 3


def test_4_1_dedup_is_per_queue(mq, make_queue):
    q1 = make_queue("q1", dedup_window_ms=WINDOW)
    q2 = make_queue("q2", dedup_window_ms=WINDOW)
    a = mq.send_one(q1, OutMessage(body=b"x", message_id="m1"))
    b = mq.send_one(q2, OutMessage(body=b"y", message_id="m1"))
    assert a != b
    assert mq.stats(q1).total == 1
    assert mq.stats(q2).total == 1


def test_4_1_dedup_record_outlives_the_message(mq, make_queue):
    q = make_queue(dedup_window_ms=WINDOW)
    first = mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    (m,) = mq.receive(q)
    m.complete()
    assert mq.send_one(q, OutMessage(body=b"x", message_id="m1")) == first
    assert mq.stats(q).total == 0
    assert mq.receive(q, max_messages=10) == []


def test_4_1_repeated_key_within_one_batch_is_deduplicated(mq, make_queue):
    q = make_queue(dedup_window_ms=WINDOW)
    result = mq.send(
        q,
        [
            OutMessage(body=b"x", message_id="m1"),
            OutMessage(body=b"x", message_id="m1"),
            OutMessage(body=b"z", message_id="m2"),
        ],
    )
    assert result[0] == result[1]
    assert result[2] not in (0, result[0])
    assert mq.stats(q).total == 2


def test_4_1_duplicate_of_a_scheduled_send_returns_its_seq(mq, make_queue, clock):
    q = make_queue(dedup_window_ms=WINDOW)
    (s,) = mq.schedule(q, [OutMessage(body=b"x", message_id="m1")], at_ms=clock.now_ms() + 5_000)
    assert mq.send_one(q, OutMessage(body=b"x", message_id="m1")) == s
    assert counts(mq, q) == (0, 0, 0, 1, 0, 1)


def test_4_2_single_send_conflict_is_dedup_conflict(mq, make_queue):
    q = make_queue(dedup_window_ms=WINDOW)
    mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    with pytest.raises(errors.DedupConflict) as exc:
        mq.send_one(q, OutMessage(body=b"different", message_id="m1"))
    assert exc.value.code == "already_exists"
    assert exc.value.http_status == 409
    assert mq.stats(q).total == 1
    with pytest.raises(errors.DedupConflict):
        mq.send(q, [OutMessage(body=b"different", message_id="m1")])  # a one-message Send


def test_4_2_single_schedule_conflict_is_dedup_conflict(mq, make_queue, clock):
    q = make_queue(dedup_window_ms=WINDOW)
    mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    with pytest.raises(errors.DedupConflict):
        mq.schedule(q, [OutMessage(body=b"y", message_id="m1")], at_ms=clock.now_ms() + 1_000)
    assert counts(mq, q) == (1, 0, 0, 0, 0, 1)


def test_4_3_batch_conflict_slot_is_zero_rest_commit(mq, make_queue):
    q = make_queue(dedup_window_ms=WINDOW)
    original = mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    result = mq.send(
        q,
        [
            OutMessage(body=b"a", message_id="a"),
            OutMessage(body=b"conflict", message_id="m1"),
            OutMessage(body=b"x", message_id="m1"),
            OutMessage(body=b"b", message_id="b"),
        ],
    )
    assert len(result) == 4
    assert result[1] == 0
    assert result[2] == original
    assert result[0] > original and result[3] > result[0]
    assert sorted(m.body for m in peek_all(mq, q)) == [b"a", b"b", b"x"]


def test_4_3_schedule_batch_conflict_slot_is_zero(mq, make_queue, clock):
    q = make_queue(dedup_window_ms=WINDOW)
    mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    result = mq.schedule(
        q,
        [OutMessage(body=b"y", message_id="m1"), OutMessage(body=b"z", message_id="m2")],
        at_ms=clock.now_ms() + 1_000,
    )
    assert result[0] == 0
    assert result[1] > 0
    assert counts(mq, q) == (1, 0, 0, 1, 0, 2)


def dedup_rows(raw_db, queue):
    con = raw_db()
    return con.execute("SELECT COUNT(*) FROM dedup WHERE queue = ?", (queue,)).fetchone()[0]


def test_4_4_each_queue_prunes_its_dedup_rows_by_its_own_window(mq, make_queue, clock, raw_db):
    second = make_queue("second", dedup_window_ms=1_000)
    week = make_queue("week", dedup_window_ms=defaults.MAX_DEDUP_WINDOW_MS)
    mq.send(second, [OutMessage(body=b"%d" % i, message_id=f"s{i}") for i in range(500)])
    mq.send_one(week, OutMessage(body=b"idle", message_id="w"))
    clock.advance(1_000)  # a row exactly one window old is out of the window
    run_maintenance_once(mq)
    assert (dedup_rows(raw_db, second), dedup_rows(raw_db, week)) == (0, 1)
    # The wide queue still deduplicates; the narrow one accepts its ids anew.
    assert (
        mq.send_one(week, OutMessage(body=b"idle", message_id="w"))
        == peek_all(mq, week)[0].seq_number
    )
    mq.send_one(second, OutMessage(body=b"other", message_id="s0"))
    assert mq.stats(second).total == 501


def test_4_4_dedup_window_above_the_maximum_is_refused(mq, make_queue):
    assert make_queue("at-max", dedup_window_ms=defaults.MAX_DEDUP_WINDOW_MS) == "at-max"
    with pytest.raises(errors.InvalidArgument, match=r"dedup_window_ms .* maximum 604800000"):
        make_queue("above", dedup_window_ms=defaults.MAX_DEDUP_WINDOW_MS + 1)
    assert [q.name for q in mq.list_queues()] == ["at-max"]

"""Conformance §6: the dead-letter state (max delivery count, redrive, purge)."""

from __future__ import annotations

import pytest
from conformance_support import counts, peek_all, peek_one, send_bodies, seqs

from mqlite import OutMessage, errors
from mqlite.testing import run_maintenance_once


def _dead_letter(mq, q, bodies, **fields):
    """Send ``bodies`` and reject them all; returns their seqs."""
    s = send_bodies(mq, q, bodies, **fields)
    done = 0
    while done < len(s):
        batch = mq.receive(q, max_messages=256)
        assert batch
        for m in batch:
            m.reject("Bad", "why")  # rejecting a group head releases the next one
        done += len(batch)
    return s


def test_6_1_max_delivery_count_via_abandon(mq, make_queue):
    q = make_queue(max_delivery_count=3)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    deliveries = 0
    while True:
        got = mq.receive(q)
        if not got:
            break
        deliveries += 1
        got[0].abandon()
    assert deliveries == 3  # delivered at most max times
    dead = peek_one(mq, q, seq)
    assert (dead.state, dead.dead_letter_reason, dead.delivery_count) == (
        "dead_lettered",
        "MaxDeliveryCountExceeded",
        3,
    )


def test_6_1_max_delivery_count_via_lock_expiry(mq, make_queue, clock):
    q = make_queue(max_delivery_count=3, lock_duration_ms=1_000)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    deliveries = 0
    for _ in range(10):
        if mq.receive(q):
            deliveries += 1
        clock.advance(1_000)
        run_maintenance_once(mq)
    assert deliveries == 3
    dead = peek_one(mq, q, seq)
    assert (dead.state, dead.dead_letter_reason) == ("dead_lettered", "MaxDeliveryCountExceeded")


def test_6_1_abandon_with_delay_at_max_dead_letters_instead_of_parking(mq, make_queue):
    q = make_queue(max_delivery_count=1)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    m.abandon(delay_ms=60_000)
    assert peek_one(mq, q, seq).state == "dead_lettered"


def test_6_1_receive_deferred_ignores_the_delivery_bound(mq, make_queue):
    q = make_queue(max_delivery_count=1)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    m.defer()
    (again,) = mq.receive_deferred(q, [seq])
    assert again.delivery_count == 2


def test_6_2_redrive_in_place_resets_count_and_keeps_enqueued_at(mq, make_queue, clock):
    q = make_queue(max_delivery_count=1)
    s = _dead_letter(mq, q, [b"1", b"2"], subject="s", properties={"k": "v"})
    before = {m.seq_number: m for m in peek_all(mq, q)}
    clock.advance(5_000)
    assert mq.redrive(q) == 2
    assert counts(mq, q) == (2, 0, 0, 0, 0, 2)
    for seq in s:
        m = peek_one(mq, q, seq)
        assert m.state == "active"
        assert m.delivery_count == 0
        assert (m.dead_letter_reason, m.dead_letter_description) == ("", "")
        assert m.enqueued_at_ms == before[seq].enqueued_at_ms
        assert m.expires_at_ms == before[seq].expires_at_ms
    got = mq.receive(q, max_messages=10)
    assert seqs(got) == s
    assert all(m.delivery_count == 1 for m in got)
    assert got[0].properties == {"k": "v"}


def test_6_2_redrive_to_a_target_queue(mq, make_queue, clock):
    src = make_queue("src", default_ttl_ms=3_600_000)
    dst = make_queue("dst")
    s = _dead_letter(mq, src, [b"1", b"2"], message_id="mid", group_id="g", subject="sub")
    clock.advance(7_000)
    assert mq.redrive(src, target=dst) == 2
    assert mq.stats(src).total == 0
    moved = peek_all(mq, dst)
    assert [m.body for m in moved] == [b"1", b"2"]
    assert all(m.seq_number > max(s) for m in moved)
    for m in moved:
        assert (m.state, m.delivery_count, m.message_id, m.group_id, m.subject) == (
            "active",
            0,
            "mid",
            "g",
            "sub",
        )
        assert m.enqueued_at_ms == clock.now_ms()
        assert m.expires_at_ms == 0


def test_6_2_redrive_respects_max_and_older_than(mq, make_queue, clock):
    q = make_queue()
    old = _dead_letter(mq, q, [b"1", b"2", b"3"])
    clock.advance(10_000)
    new = _dead_letter(mq, q, [b"4"])
    assert mq.redrive(q, older_than_ms=5_000, max=2) == 2
    assert [m.seq_number for m in peek_all(mq, q, "active")] == old[:2]
    assert mq.redrive(q, older_than_ms=5_000) == 1
    assert [m.seq_number for m in peek_all(mq, q, "dead_lettered")] == new
    assert mq.redrive(q) == 1
    assert mq.stats(q).dead_lettered == 0


def test_6_2_redrive_with_rate_moves_everything(mq, make_queue):
    q = make_queue()
    _dead_letter(mq, q, [b"1", b"2", b"3"])
    assert mq.redrive(q, rate_per_sec=10) == 3
    assert mq.stats(q).active == 3


def test_6_2_redrive_touches_only_dead_lettered_rows(mq, make_queue, clock):
    q = make_queue()
    (d,) = _dead_letter(mq, q, [b"dead"])
    a, lk, df = send_bodies(mq, q, [b"active", b"locked", b"deferred"])
    (sch,) = mq.schedule(q, [OutMessage(body=b"s")], at_ms=clock.now_ms() + 60_000)
    got = mq.receive(q, max_messages=3)
    by = {m.seq_number: m for m in got}
    by[a].abandon()
    by[df].defer()
    assert mq.redrive(q) == 1
    assert {m.seq_number: m.state for m in peek_all(mq, q)} == {
        d: "active",
        a: "active",
        lk: "locked",
        df: "deferred",
        sch: "scheduled",
    }


def test_6_2_redrive_errors(mq, make_queue):
    q = make_queue()
    with pytest.raises(errors.NotFound):
        mq.redrive("no-such-queue")
    with pytest.raises(errors.NotFound):
        mq.redrive(q, target="no-such-target")
    for bad in ({"max": -1}, {"older_than_ms": -1}, {"rate_per_sec": -1}):
        with pytest.raises(errors.InvalidArgument):
            mq.redrive(q, **bad)


def test_6_2_purge_deletes_dead_letters_only(mq, make_queue):
    q = make_queue()
    _dead_letter(mq, q, [b"1", b"2"])
    active = mq.send_one(q, OutMessage(body=b"active"))
    assert mq.purge(q) == 2  # both zero: the whole DLQ
    assert [m.seq_number for m in peek_all(mq, q)] == [active]
    assert mq.purge(q) == 0


def test_6_2_purge_respects_max_and_older_than(mq, make_queue, clock):
    q = make_queue()
    old = _dead_letter(mq, q, [b"1", b"2", b"3"])
    clock.advance(10_000)
    new = _dead_letter(mq, q, [b"4"])
    assert mq.purge(q, max=1) == 1  # the oldest by id
    assert [m.seq_number for m in peek_all(mq, q)] == old[1:] + new
    assert mq.purge(q, older_than_ms=5_000) == 2
    assert [m.seq_number for m in peek_all(mq, q)] == new


def test_6_2_purge_errors(mq, make_queue):
    q = make_queue()
    with pytest.raises(errors.NotFound):
        mq.purge("no-such-queue")
    for bad in ({"max": -1}, {"older_than_ms": -1}):
        with pytest.raises(errors.InvalidArgument):
            mq.purge(q, **bad)


def test_6_2_redrive_selection_moves_only_the_named_dead_letters(mq, make_queue):
    src = make_queue("src")
    dst = make_queue("dst")
    s1, s2, s3, s4 = _dead_letter(mq, src, [b"1", b"2", b"3", b"4"])
    active = mq.send_one(src, OutMessage(body=b"active"))
    # An active seq_number and an unknown one in the selection are skipped, not moved.
    assert mq.redrive(src, seq_numbers=[s2, active, 10**9]) == 1
    assert {m.seq_number: m.state for m in peek_all(mq, src)}[s2] == "active"
    assert [m.body for m in peek_all(mq, dst, "active")] == []
    assert mq.redrive(src, target=dst, seq_numbers=[s4, s1]) == 2
    assert [m.body for m in peek_all(mq, dst)] == [b"1", b"4"]  # source order kept
    assert [m.seq_number for m in peek_all(mq, src, "dead_lettered")] == [s3]
    assert mq.redrive(src, seq_numbers=[s3], max=1, rate_per_sec=1) == 1
    assert mq.stats(src).dead_lettered == 0


def test_6_2_purge_selection_deletes_only_the_named_dead_letters(mq, make_queue):
    q = make_queue()
    s1, s2, s3 = _dead_letter(mq, q, [b"1", b"2", b"3"])
    active = mq.send_one(q, OutMessage(body=b"active"))
    assert mq.purge(q, seq_numbers=[s1, s3, active]) == 2
    assert [m.seq_number for m in peek_all(mq, q)] == [s2, active]


def test_6_2_selection_is_bounded_to_1000(mq, make_queue):
    q = make_queue()
    (s,) = _dead_letter(mq, q, [b"1"])
    for call in (mq.redrive, mq.purge):
        with pytest.raises(errors.InvalidArgument, match="seq_numbers: at most 1000"):
            call(q, seq_numbers=list(range(1, 1002)))
    assert mq.stats(q).dead_lettered == 1
    assert mq.purge(q, seq_numbers=list(range(s, s + 1000))) == 1

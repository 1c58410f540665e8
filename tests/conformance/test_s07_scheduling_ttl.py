"""Conformance §7: scheduling, cancel, deferral and TTL."""

from __future__ import annotations

import pytest
from conformance_support import counts, peek_one, send_bodies, seqs, state_of

from mqlite import OutMessage, errors
from mqlite.testing import run_maintenance_once


def test_7_1a_scheduled_message_is_not_receivable_until_activated(mq, make_queue, clock):
    q = make_queue()
    at = clock.now_ms() + 60_000
    (seq,) = mq.schedule(q, [OutMessage(body=b"later")], at_ms=at)
    m = peek_one(mq, q, seq)
    assert (m.state, m.visible_at_ms, m.delivery_count) == ("scheduled", at, 0)
    assert counts(mq, q) == (0, 0, 0, 1, 0, 1)
    assert mq.receive(q, max_messages=10) == []

    clock.advance(59_999)
    run_maintenance_once(mq)
    assert state_of(mq, q, seq) == "scheduled"
    assert mq.receive(q, max_messages=10) == []

    clock.advance(1)
    run_maintenance_once(mq)
    assert state_of(mq, q, seq) == "active"
    (got,) = mq.receive(q)
    assert (got.seq_number, got.body, got.delivery_count) == (seq, b"later", 1)


def test_7_1a_due_scheduled_row_waits_for_the_scheduler(mq, make_queue, clock):
    q = make_queue()
    (seq,) = mq.schedule(q, [OutMessage(body=b"x")], at_ms=clock.now_ms() + 1_000)
    clock.advance(5_000)
    assert mq.receive(q, max_messages=10) == []  # only the scheduler activates
    run_maintenance_once(mq)
    assert seqs(mq.receive(q)) == [seq]


def test_7_1a_schedule_time_must_be_in_the_future(mq, make_queue, clock):
    q = make_queue()
    for at in (clock.now_ms(), clock.now_ms() - 1):
        with pytest.raises(errors.InvalidArgument):
            mq.schedule(q, [OutMessage(body=b"x")], at_ms=at)
    assert mq.stats(q).total == 0


def test_7_1b_cancel_deletes_a_never_delivered_scheduled_row(mq, make_queue, clock):
    q = make_queue()
    keep, drop = mq.schedule(
        q, [OutMessage(body=b"keep"), OutMessage(body=b"drop")], at_ms=clock.now_ms() + 1_000
    )
    mq.cancel(q, drop)
    assert peek_one(mq, q, drop) is None
    assert state_of(mq, q, keep) == "scheduled"
    with pytest.raises(errors.NotFound):
        mq.cancel(q, drop)
    clock.advance(1_000)
    run_maintenance_once(mq)
    assert seqs(mq.receive(q, max_messages=10)) == [keep]


def test_7_1b_cancel_of_a_backoff_parked_redelivery_is_not_found(mq, make_queue, clock):
    q = make_queue(max_delivery_count=5)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    m.abandon(delay_ms=2_000)
    assert state_of(mq, q, seq) == "scheduled"
    with pytest.raises(errors.NotFound) as exc:
        mq.cancel(q, seq)
    assert exc.value.http_status == 404
    clock.advance(2_000)
    run_maintenance_once(mq)
    (again,) = mq.receive(q)  # the message comes back
    assert (again.seq_number, again.delivery_count) == (seq, 2)


def test_7_1b_cancel_of_non_scheduled_or_unknown_seq_is_not_found(mq, make_queue, clock):
    q = make_queue()
    other = make_queue("other")
    active = mq.send_one(q, OutMessage(body=b"x"))
    (sched,) = mq.schedule(other, [OutMessage(body=b"y")], at_ms=clock.now_ms() + 1_000)
    for target_q, seq in ((q, active), (q, 987_654), (q, sched), ("no-such-queue", sched)):
        with pytest.raises(errors.NotFound):
            mq.cancel(target_q, seq)
    assert state_of(mq, q, active) == "active"
    assert state_of(mq, other, sched) == "scheduled"


def test_7_2a_ttl_expiry_dead_letters(mq, make_queue, clock):
    q = make_queue(default_ttl_ms=1_000, dead_letter_on_expire=True)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    assert peek_one(mq, q, seq).expires_at_ms == clock.now_ms() + 1_000
    clock.advance(999)
    run_maintenance_once(mq)
    assert state_of(mq, q, seq) == "active"
    clock.advance(1)
    run_maintenance_once(mq)
    dead = peek_one(mq, q, seq)
    assert (dead.state, dead.dead_letter_reason) == ("dead_lettered", "TTLExpired")


def test_7_2a_ttl_expiry_discards_when_dead_letter_on_expire_is_off(mq, make_queue, clock):
    q = make_queue(default_ttl_ms=1_000, dead_letter_on_expire=False)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    clock.advance(1_000)
    run_maintenance_once(mq)
    assert peek_one(mq, q, seq) is None
    assert mq.stats(q).total == 0


def test_7_2a_expired_message_is_not_receivable_before_the_sweep(mq, make_queue, clock):
    q = make_queue(default_ttl_ms=1_000)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    clock.advance(1_000)
    assert mq.receive(q, max_messages=10) == []
    assert state_of(mq, q, seq) == "active"


def test_7_2a_request_ttl_is_capped_by_the_queue_default(mq, make_queue, clock):
    q = make_queue(default_ttl_ms=10_000)
    now = clock.now_ms()
    short, long_ = (
        mq.send(q, [OutMessage(body=b"s")], ttl_ms=500)[0],
        mq.send(q, [OutMessage(body=b"l")], ttl_ms=60_000)[0],
    )
    assert peek_one(mq, q, short).expires_at_ms == now + 500
    assert peek_one(mq, q, long_).expires_at_ms == now + 10_000
    unlimited = make_queue("unlimited")
    (s,) = mq.send(unlimited, [OutMessage(body=b"x")], ttl_ms=None)
    assert peek_one(mq, unlimited, s).expires_at_ms == 0
    (s,) = mq.send(unlimited, [OutMessage(body=b"x")], ttl_ms=2_500)
    assert peek_one(mq, unlimited, s).expires_at_ms == now + 2_500


def _into_state(mq, q, clock, state):
    """One message with a 1 s TTL, brought into ``state``; returns (seq, lock_token)."""
    (seq,) = mq.send(q, [OutMessage(body=b"x")], ttl_ms=1_000)
    if state == "active":
        return seq, ""
    (m,) = mq.receive(q)
    if state == "deferred":
        m.defer()
    elif state == "scheduled":
        m.abandon(delay_ms=600_000)  # backoff parking keeps the TTL deadline
    assert state_of(mq, q, seq) == state
    return seq, m.lock_token


@pytest.mark.parametrize("state", ["active", "locked", "deferred", "scheduled"])
@pytest.mark.parametrize("to_dlq", [True, False])
def test_7_2b_ttl_covers_every_non_terminal_state(mq, make_queue, clock, state, to_dlq):
    q = make_queue(lock_duration_ms=600_000, dead_letter_on_expire=to_dlq, max_delivery_count=5)
    seq, token = _into_state(mq, q, clock, state)
    clock.advance(1_000)
    run_maintenance_once(mq)
    if to_dlq:
        dead = peek_one(mq, q, seq)
        assert (dead.state, dead.dead_letter_reason) == ("dead_lettered", "TTLExpired")
        assert dead.lock_token == ""
    else:
        assert peek_one(mq, q, seq) is None
    if token:
        with pytest.raises(errors.LockLost):
            mq.complete(q, seq, token)


def test_7_2b_ttl_is_anchored_at_visible_at(mq, make_queue, clock):
    q = make_queue(default_ttl_ms=5_000)
    at = clock.now_ms() + 60_000
    (seq,) = mq.schedule(q, [OutMessage(body=b"x")], at_ms=at)
    m = peek_one(mq, q, seq)
    assert m.expires_at_ms == at + 5_000
    clock.advance(60_000)
    run_maintenance_once(mq)
    assert state_of(mq, q, seq) == "active"
    (got,) = mq.receive(q)
    assert got.seq_number == seq


def test_7_2b_deferred_message_recovers_only_through_ttl(mq, make_queue, clock):
    q = make_queue(default_ttl_ms=3_600_000)
    s = send_bodies(mq, q, [b"x"])
    (m,) = mq.receive(q)
    m.defer()
    clock.advance(3_599_999)
    run_maintenance_once(mq)
    assert state_of(mq, q, s[0]) == "deferred"
    clock.advance(1)
    run_maintenance_once(mq)
    assert peek_one(mq, q, s[0]).dead_letter_reason == "TTLExpired"

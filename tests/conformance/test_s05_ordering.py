"""Conformance §5: ordering modes and the head-of-line claim rule (deferred, scheduled and
locked predecessors block, the locked probe ignores lease expiry)."""

from __future__ import annotations

import pytest
from conformance_support import counts, peek_one, seqs, state_of

from mqlite import OutMessage, errors
from mqlite.testing import run_maintenance_once

LOCK = 10_000


def _send(mq, q, *specs):
    """specs: (body, group) pairs; group "" = ungrouped."""
    return mq.send(q, [OutMessage(body=b.encode(), group_id=g) for b, g in specs])


def test_5_1_standard_is_per_group_fifo_cross_group_parallel(mq, make_queue):
    q = make_queue(ordering_mode="standard")
    a1, a2, b1, b2 = _send(mq, q, ("a1", "A"), ("a2", "A"), ("b1", "B"), ("b2", "B"))
    got = mq.receive(q, max_messages=10)
    assert seqs(got) == [a1, b1]  # one per group, the group heads
    assert mq.receive(q, max_messages=10) == []
    got[1].complete()
    assert seqs(mq.receive(q, max_messages=10)) == [b2]
    got[0].complete()
    assert seqs(mq.receive(q, max_messages=10)) == [a2]


def test_5_1_standard_ungrouped_messages_are_unordered_and_unbounded(mq, make_queue):
    q = make_queue(ordering_mode="standard")
    s = _send(mq, q, *[(str(i), "") for i in range(5)])
    a1, a2 = _send(mq, q, ("a1", "A"), ("a2", "A"))
    got = mq.receive(q, max_messages=10)
    assert seqs(got) == [*s, a1]
    assert a2 not in seqs(got)


def test_5_1_peek_lock_batch_never_holds_two_messages_of_one_group(mq, make_queue):
    q = make_queue(ordering_mode="group_fifo")
    _send(mq, q, *[(str(i), "A") for i in range(5)], *[(str(i), "B") for i in range(5)])
    got = mq.receive(q, max_messages=256)
    assert sorted(m.group_id for m in got) == ["A", "B"]


def test_5_1_group_fifo_and_standard_share_the_claim_rule(mq, make_queue):
    results = {}
    for mode in ("standard", "group_fifo"):
        q = make_queue(mode, ordering_mode=mode)
        s = _send(mq, q, ("a1", "A"), ("b1", "B"), ("a2", "A"), ("c1", "C"), ("b2", "B"))
        rounds = []
        for _ in range(4):
            got = mq.receive(q, max_messages=10)
            rounds.append([s.index(m.seq_number) for m in got])
            for m in got:
                m.complete()
        results[mode] = rounds
    assert results["standard"] == results["group_fifo"] == [[0, 1, 3], [2, 4], [], []]


def test_5_1_future_scheduled_send_blocks_later_messages_of_its_group(mq, make_queue, clock):
    q = make_queue(ordering_mode="group_fifo")
    (early,) = _send(mq, q, ("early", "A"))
    (sched,) = mq.schedule(q, [OutMessage(body=b"s", group_id="A")], at_ms=clock.now_ms() + 5_000)
    later, b1 = _send(mq, q, ("later", "A"), ("b1", "B"))
    got = mq.receive(q, max_messages=10)
    assert seqs(got) == [early, b1]  # sent earlier: unaffected; other group proceeds
    for m in got:
        m.complete()
    assert mq.receive(q, max_messages=10) == []  # `later` waits behind the scheduled one
    clock.advance(5_000)
    run_maintenance_once(mq)
    (m,) = mq.receive(q, max_messages=10)
    assert m.seq_number == sched
    m.complete()
    assert seqs(mq.receive(q, max_messages=10)) == [later]


def test_5_1_expired_ttl_predecessor_neither_claimable_nor_blocking(mq, make_queue, clock):
    q = make_queue(ordering_mode="group_fifo")
    (a1,) = mq.send(q, [OutMessage(body=b"a1", group_id="A")], ttl_ms=1_000)
    (a2,) = _send(mq, q, ("a2", "A"))
    clock.advance(1_000)  # a1 expired but not swept
    assert state_of(mq, q, a1) == "active"
    assert seqs(mq.receive(q, max_messages=10)) == [a2]


def test_5_1_receive_and_delete_may_return_a_groups_consecutive_messages(mq, make_queue):
    q = make_queue(ordering_mode="group_fifo")
    s = _send(mq, q, ("1", "A"), ("2", "A"), ("3", "A"))
    got = mq.receive(q, max_messages=10, mode="receive_and_delete")
    assert seqs(got) == s
    assert all(m.lock_token == "" and m.locked_until_ms == 0 for m in got)
    assert mq.stats(q).total == 0


def test_5_2_group_fifo_send_without_group_is_group_required(mq, make_queue):
    q = make_queue(ordering_mode="group_fifo")
    with pytest.raises(errors.GroupRequired) as exc:
        mq.send_one(q, OutMessage(body=b"x"))
    assert exc.value.code == "group_required"
    assert exc.value.http_status == 400
    assert mq.stats(q).total == 0


def test_5_2_group_required_rolls_back_the_whole_batch(mq, make_queue):
    q = make_queue(ordering_mode="group_fifo")
    with pytest.raises(errors.GroupRequired):
        mq.send(q, [OutMessage(body=b"ok", group_id="A"), OutMessage(body=b"missing")])
    assert mq.stats(q).total == 0


def test_5_2_schedule_batch_is_atomic(mq, make_queue, clock):
    q = make_queue(ordering_mode="group_fifo")
    with pytest.raises(errors.GroupRequired):
        mq.schedule(
            q,
            [OutMessage(body=b"ok", group_id="A"), OutMessage(body=b"missing")],
            at_ms=clock.now_ms() + 1_000,
        )
    assert mq.stats(q).total == 0


def test_5_3_strict_fifo_has_one_message_in_flight(mq, make_queue):
    q = make_queue(ordering_mode="strict_fifo")
    s = _send(mq, q, ("1", "A"), ("2", "B"), ("3", ""), ("4", "A"))
    for expected in s:
        got = mq.receive(q, max_messages=256)
        assert seqs(got) == [expected]
        assert mq.receive(q, max_messages=256) == []
        got[0].complete()
    assert mq.stats(q).total == 0


def test_5_3_strict_fifo_does_not_require_a_group(mq, make_queue):
    q = make_queue(ordering_mode="strict_fifo")
    seq = mq.send_one(q, OutMessage(body=b"x"))
    assert seqs(mq.receive(q)) == [seq]


def test_5_3_strict_fifo_receive_and_delete_returns_several_in_order(mq, make_queue):
    q = make_queue(ordering_mode="strict_fifo")
    s = _send(mq, q, ("1", ""), ("2", "B"), ("3", ""))
    assert seqs(mq.receive(q, max_messages=10, mode="receive_and_delete")) == s


@pytest.mark.parametrize("mode", ["group_fifo", "standard"])
def test_5_4_fifo_holds_across_lock_expiry(mq, make_queue, clock, mode):
    q = make_queue(ordering_mode=mode, lock_duration_ms=LOCK, max_delivery_count=5)
    a1, a2 = _send(mq, q, ("a1", "A"), ("a2", "A"))
    (head,) = mq.receive(q, max_messages=10)
    assert head.seq_number == a1
    clock.advance(LOCK + 5_000)  # expired, not reaped
    (b1,) = _send(mq, q, ("b1", "B"))
    assert seqs(mq.receive(q, max_messages=10)) == [b1]  # A stays blocked; B proceeds
    run_maintenance_once(mq)
    (again,) = mq.receive(q, max_messages=10)
    assert again.seq_number == a1  # the head is redelivered first
    assert again.delivery_count == 2
    again.complete()
    assert seqs(mq.receive(q, max_messages=10)) == [a2]


def test_5_4_strict_fifo_holds_across_lock_expiry(mq, make_queue, clock):
    q = make_queue(ordering_mode="strict_fifo", lock_duration_ms=LOCK, max_delivery_count=5)
    s1, s2 = _send(mq, q, ("1", "A"), ("2", "B"))
    mq.receive(q)
    clock.advance(LOCK)
    assert mq.receive(q, max_messages=10) == []
    run_maintenance_once(mq)
    (again,) = mq.receive(q, max_messages=10)
    assert (again.seq_number, again.delivery_count) == (s1, 2)
    again.complete()
    assert seqs(mq.receive(q)) == [s2]


@pytest.mark.parametrize("mode", ["group_fifo", "strict_fifo"])
def test_5_4_dead_lettered_head_unblocks(mq, make_queue, clock, mode):
    q = make_queue(ordering_mode=mode, lock_duration_ms=LOCK, max_delivery_count=1)
    a1, a2 = _send(mq, q, ("a1", "A"), ("a2", "A"))
    mq.receive(q)
    clock.advance(LOCK)
    assert mq.receive(q, max_messages=10) == []
    run_maintenance_once(mq)
    dead = peek_one(mq, q, a1)
    assert (dead.state, dead.dead_letter_reason) == ("dead_lettered", "MaxDeliveryCountExceeded")
    assert seqs(mq.receive(q, max_messages=10)) == [a2]


@pytest.mark.parametrize("mode", ["group_fifo", "strict_fifo", "standard"])
def test_5_5_backoff_head_is_never_overtaken(mq, make_queue, clock, mode):
    q = make_queue(ordering_mode=mode, max_delivery_count=5)
    a1, a2 = _send(mq, q, ("a1", "A"), ("a2", "A"))
    (head,) = mq.receive(q, max_messages=1)
    head.abandon(delay_ms=3_000)
    assert state_of(mq, q, a1) == "scheduled"
    with pytest.raises(errors.NotFound):
        mq.cancel(q, a1)  # backoff parking is not cancellable
    (b1,) = _send(mq, q, ("b1", "B"))
    other = mq.receive(q, max_messages=10)
    assert seqs(other) == ([] if mode == "strict_fifo" else [b1])
    for m in other:
        m.complete()
    clock.advance(3_000)
    run_maintenance_once(mq)
    (again,) = mq.receive(q, max_messages=10)
    assert (again.seq_number, again.delivery_count) == (a1, 2)
    again.complete()
    expected = [a2, b1] if mode == "strict_fifo" else [a2]
    got = []
    for _ in expected:
        (m,) = mq.receive(q, max_messages=1)
        got.append(m.seq_number)
        m.complete()
    assert got == expected
    assert counts(mq, q)[5] == 0

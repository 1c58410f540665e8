"""Conformance §18: the queue's retry policy and the last error kept with a message.

Every rule on the FakeClock with background loops off: time moves by ``clock.advance``
and ``run_maintenance_once`` only. A policy is ``retry_initial_delay_ms`` (0 = off),
``retry_multiplier``, ``retry_max_delay_ms`` and ``retry_jitter``; the n-th failed delivery
waits ``min(max, initial * multiplier ** (n - 1))``, jittered down by at most ``jitter``.
"""

from __future__ import annotations

import pytest
from conformance_support import peek_one

from mqlite import OutMessage, QueueConfig, errors
from mqlite.testing import run_maintenance_once

POLICY = {"retry_initial_delay_ms": 1_000, "retry_multiplier": 2.0, "retry_max_delay_ms": 60_000}


def _fail_and_check_parking(mq, clock, q, seq, expected_ms, **abandon):
    """Receive ``seq``, abandon it without a delay, and check it is parked for exactly
    ``expected_ms``: not receivable 1 ms before, receivable at the deadline."""
    (m,) = mq.receive(q)
    assert m.seq_number == seq
    m.abandon(**abandon)
    parked = peek_one(mq, q, seq)
    assert (parked.state, parked.visible_at_ms) == ("scheduled", clock.now_ms() + expected_ms)
    clock.advance(expected_ms - 1)
    run_maintenance_once(mq)
    assert mq.receive(q) == [] and peek_one(mq, q, seq).state == "scheduled"
    clock.advance(1)
    run_maintenance_once(mq)
    assert peek_one(mq, q, seq).state == "active"


def test_18_1_delays_follow_the_policy_for_failures_1_to_6(mq, make_queue, clock):
    q = make_queue(max_delivery_count=10, **POLICY)
    seq = mq.send_one(q, OutMessage(b"x"))
    for expected in (1_000, 2_000, 4_000, 8_000, 16_000, 32_000):
        _fail_and_check_parking(mq, clock, q, seq, expected)
    assert peek_one(mq, q, seq).delivery_count == 6


def test_18_1_the_delay_is_capped_at_retry_max_delay_ms(mq, make_queue, clock):
    q = make_queue(retry_initial_delay_ms=1_000, retry_multiplier=10, retry_max_delay_ms=5_000)
    seq = mq.send_one(q, OutMessage(b"x"))
    for expected in (1_000, 5_000, 5_000, 5_000):
        _fail_and_check_parking(mq, clock, q, seq, expected)


def test_18_1_a_multiplier_of_1_is_a_constant_delay(mq, make_queue, clock):
    q = make_queue(retry_initial_delay_ms=700, retry_multiplier=1)
    seq = mq.send_one(q, OutMessage(b"x"))
    for _ in range(4):
        _fail_and_check_parking(mq, clock, q, seq, 700)


def test_18_2_jittered_delays_stay_within_their_bounds_over_many_draws(mq, make_queue, clock):
    """jitter 0.5 on a 10 s delay: every draw in [5000, 10000], and the draws spread."""
    q = make_queue(retry_initial_delay_ms=10_000, retry_jitter=0.5, max_delivery_count=10)
    n = 400
    mq.send(q, [OutMessage(b"%d" % i) for i in range(n)])
    now = clock.now_ms()
    delays = []
    for batch in iter(lambda: mq.receive(q, max_messages=256), []):
        for m in batch:
            m.abandon()
            delays.append(peek_one(mq, q, m.seq_number).visible_at_ms - now)
    assert len(delays) == n
    assert all(5_000 <= d <= 10_000 for d in delays), (min(delays), max(delays))
    assert min(delays) < 6_000 and max(delays) > 9_000  # uniform over the whole range
    assert len(set(delays)) > n // 4


def test_18_3_an_expired_lock_parks_as_scheduled_for_the_policy_delay(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=5_000, **POLICY)
    seq = mq.send_one(q, OutMessage(b"x"))
    (m,) = mq.receive(q)
    deadline = m.locked_until_ms
    clock.advance(5_000)
    run_maintenance_once(mq)
    parked = peek_one(mq, q, seq)
    assert (parked.state, parked.visible_at_ms) == ("scheduled", deadline + 1_000)
    assert (parked.last_error, parked.last_error_at_ms) == ("lock expired", deadline)
    assert mq.receive(q) == []
    clock.advance(1_000)
    run_maintenance_once(mq)
    (again,) = mq.receive(q)
    assert (again.seq_number, again.delivery_count, again.last_error) == (seq, 2, "lock expired")
    clock.advance(5_000)  # the second expiry waits twice as long
    run_maintenance_once(mq)
    assert peek_one(mq, q, seq).visible_at_ms == again.locked_until_ms + 2_000


def test_18_3_a_lock_reaped_late_is_active_at_once_if_its_delay_already_passed(
    mq, make_queue, clock
):
    q = make_queue(lock_duration_ms=5_000, **POLICY)
    seq = mq.send_one(q, OutMessage(b"x"))
    (m,) = mq.receive(q)
    clock.advance(5_000 + 3_000)  # the reaper ran 3 s after the lease lapsed (> 1 s delay)
    run_maintenance_once(mq)
    row = peek_one(mq, q, seq)
    assert (row.state, row.visible_at_ms) == ("active", m.locked_until_ms + 1_000)
    assert mq.receive(q)[0].seq_number == seq


def test_18_4_an_explicit_abandon_delay_wins_over_the_policy(mq, make_queue, clock):
    q = make_queue(retry_initial_delay_ms=60_000)
    seq = mq.send_one(q, OutMessage(b"x"))
    (m,) = mq.receive(q)
    m.abandon(delay_ms=50)
    assert peek_one(mq, q, seq).visible_at_ms == clock.now_ms() + 50
    clock.advance(50)
    run_maintenance_once(mq)
    assert mq.receive(q)[0].seq_number == seq


@pytest.mark.parametrize("mode", ["group_fifo", "strict_fifo"])
@pytest.mark.parametrize("how", ["abandon", "lock_expiry"])
def test_18_5_a_parked_head_holds_its_group_until_redelivered(mq, make_queue, clock, mode, how):
    q = make_queue(ordering_mode=mode, lock_duration_ms=5_000, **POLICY)
    a = mq.send_one(q, OutMessage(b"a", group_id="g1"))
    b = mq.send_one(q, OutMessage(b"b", group_id="g1"))
    c = mq.send_one(q, OutMessage(b"c", group_id="g2"))
    (head,) = mq.receive(q)
    assert head.seq_number == a
    if how == "abandon":
        head.abandon()
    else:
        clock.advance(5_000)
        run_maintenance_once(mq)
    assert peek_one(mq, q, a).state == "scheduled"
    others = [m.seq_number for m in mq.receive(q, max_messages=10)]
    # group_fifo: the other group proceeds, b waits behind its parked head; strict: nothing.
    assert others == ([c] if mode == "group_fifo" else [])
    clock.advance(1_000)
    run_maintenance_once(mq)
    (again,) = mq.receive(q, max_messages=10)
    assert again.seq_number == a  # the head comes back first, then b
    again.complete()
    assert [m.seq_number for m in mq.receive(q, max_messages=10)] == [b]


def test_18_6_the_dead_letter_description_carries_the_last_error(mq, make_queue):
    q = make_queue(max_delivery_count=2, **POLICY)
    seq = mq.send_one(q, OutMessage(b"x"))
    mq.receive(q)[0].abandon(delay_ms=1, error="KeyError: 'first'")
    mq._engine.clock.advance(1)
    run_maintenance_once(mq)
    mq.receive(q)[0].abandon(error="ValueError: second")
    dead = peek_one(mq, q, seq)
    assert (dead.state, dead.dead_letter_reason, dead.dead_letter_description) == (
        "dead_lettered",
        "MaxDeliveryCountExceeded",
        "ValueError: second",
    )
    assert dead.last_error == "ValueError: second"


def test_18_6_an_abandon_without_error_at_the_limit_keeps_the_earlier_error(mq, make_queue):
    q = make_queue(max_delivery_count=2)
    seq = mq.send_one(q, OutMessage(b"x"))
    mq.receive(q)[0].abandon(error="TimeoutError: upstream")
    mq.receive(q)[0].abandon()
    dead = peek_one(mq, q, seq)
    assert (dead.dead_letter_reason, dead.dead_letter_description) == (
        "MaxDeliveryCountExceeded",
        "TimeoutError: upstream",
    )


@pytest.mark.parametrize("policy", [{}, POLICY], ids=["no_policy", "policy"])
def test_18_6_a_lock_expiry_at_the_limit_dead_letters_with_lock_expired(
    mq, make_queue, clock, policy
):
    q = make_queue(max_delivery_count=1, lock_duration_ms=5_000, **policy)
    seq = mq.send_one(q, OutMessage(b"x"))
    mq.receive(q)
    clock.advance(5_000)
    run_maintenance_once(mq)
    dead = peek_one(mq, q, seq)
    assert (dead.state, dead.dead_letter_reason, dead.dead_letter_description) == (
        "dead_lettered",
        "MaxDeliveryCountExceeded",
        "lock expired",
    )


def test_18_7_receive_and_peek_carry_the_last_error_and_when(mq, make_queue, clock):
    q = make_queue()
    seq = mq.send_one(q, OutMessage(b"x"))
    (m,) = mq.receive(q)
    assert (m.last_error, m.last_error_at_ms) == ("", 0)
    failed_at = clock.now_ms()
    m.abandon(error="RuntimeError: db down ✗")
    clock.advance(10)
    assert (peek_one(mq, q, seq).last_error, peek_one(mq, q, seq).last_error_at_ms) == (
        "RuntimeError: db down ✗",
        failed_at,
    )
    (m2,) = mq.receive(q)
    assert (m2.last_error, m2.last_error_at_ms) == ("RuntimeError: db down ✗", failed_at)
    m2.abandon()  # no error given: the earlier one stays the last known
    assert peek_one(mq, q, seq).last_error_at_ms == failed_at


def test_18_7_an_error_over_4_kib_is_refused_naming_the_limit(mq, make_queue):
    q = make_queue()
    mq.send_one(q, OutMessage(b"x"))
    (m,) = mq.receive(q)
    with pytest.raises(errors.InvalidArgument, match="error is longer than 4096 bytes"):
        m.abandon(error="x" * 4095 + "é")  # 4097 bytes of UTF-8
    m.abandon(error="é" * 2048)  # exactly 4096 bytes
    assert mq.receive(q)[0].last_error == "é" * 2048


def test_18_7_an_abandon_replay_is_keyed_by_its_error_too(mq, make_queue):
    q = make_queue()
    mq.send_one(q, OutMessage(b"x"))
    (m,) = mq.receive(q)
    m.abandon(error="boom")
    m.abandon(error="boom")  # a lost answer retried: the receipt replays it
    with pytest.raises(errors.LockLost):
        m.abandon(error="another")  # not the request that was applied


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"retry_initial_delay_ms": -1}, "retry_initial_delay_ms"),
        ({"retry_initial_delay_ms": 1.5}, "retry_initial_delay_ms"),
        ({"retry_multiplier": 0.5}, "retry_multiplier"),
        ({"retry_multiplier": 1001}, "retry_multiplier"),
        ({"retry_multiplier": float("nan")}, "retry_multiplier"),
        ({"retry_multiplier": True}, "retry_multiplier"),
        ({"retry_max_delay_ms": -5}, "retry_max_delay_ms"),
        ({"retry_initial_delay_ms": 2_000, "retry_max_delay_ms": 1_000}, "retry_max_delay_ms"),
        ({"retry_jitter": -0.1}, "retry_jitter"),
        ({"retry_jitter": 1.5}, "retry_jitter"),
        ({"retry_jitter": float("inf")}, "retry_jitter"),
    ],
)
def test_18_8_out_of_range_policy_fields_are_refused_naming_the_field(mq, config, field):
    with pytest.raises(errors.InvalidArgument, match=field):
        mq.create_queue("q", QueueConfig(**config))


def test_18_8_the_policy_is_stored_and_listed_and_can_be_turned_off(mq, make_queue):
    q = make_queue(
        retry_initial_delay_ms=1_000,
        retry_multiplier=3,
        retry_max_delay_ms=9_000,
        retry_jitter=0.25,
    )
    cfg = mq.get_queue(q).config
    assert (
        cfg.retry_initial_delay_ms,
        cfg.retry_multiplier,
        cfg.retry_max_delay_ms,
        cfg.retry_jitter,
    ) == (1_000, 3.0, 9_000, 0.25)
    make_queue(q)  # CreateQueue overwrites every field: the policy is off again
    assert mq.get_queue(q).config.retry_initial_delay_ms == 0
    seq = mq.send_one(q, OutMessage(b"x"))
    mq.receive(q)[0].abandon()
    assert peek_one(mq, q, seq).state == "active"


@pytest.mark.parametrize(
    "config",
    [{}, {"retry_initial_delay_ms": 0, "retry_multiplier": 5, "retry_jitter": 1.0}],
    ids=["absent", "initial_0"],
)
def test_18_9_without_a_policy_failures_come_back_at_once_as_before(mq, make_queue, clock, config):
    """No policy (or an initial delay of 0): abandon and lock expiry make the message
    active at once with visible_at = now, exactly the pre-policy behaviour."""
    q = make_queue(lock_duration_ms=5_000, max_delivery_count=10, **config)
    seq = mq.send_one(q, OutMessage(b"x"))
    for _ in range(3):
        (m,) = mq.receive(q)
        m.abandon()
        row = peek_one(mq, q, seq)
        assert (row.state, row.visible_at_ms) == ("active", clock.now_ms())
    mq.receive(q)
    clock.advance(5_000)
    run_maintenance_once(mq)
    row = peek_one(mq, q, seq)
    assert (row.state, row.delivery_count) == ("active", 4)
    assert mq.receive(q)[0].seq_number == seq


def test_18_7_a_same_queue_redrive_clears_the_last_error(mq, make_queue):
    q = make_queue(max_delivery_count=1)
    seq = mq.send_one(q, OutMessage(b"x"))
    mq.receive(q)[0].abandon(error="OSError: disk")
    assert peek_one(mq, q, seq).state == "dead_lettered"
    assert mq.redrive(q) == 1
    (m,) = mq.receive(q)
    assert (m.seq_number, m.delivery_count, m.last_error, m.last_error_at_ms) == (seq, 1, "", 0)


def test_18_8_ensure_queue_reports_a_different_retry_policy(mq, make_queue):
    q = make_queue(retry_initial_delay_ms=1_000, retry_jitter=0.5)
    found = mq.ensure_queue(q)  # every default: no policy asked for
    assert found.differs == ("retry_initial_delay_ms", "retry_jitter")
    assert mq.get_queue(q).config.retry_initial_delay_ms == 1_000  # left as it is

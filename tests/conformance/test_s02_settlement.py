"""Conformance §2: settlement, fenced on the lock token AND an unexpired lease
(docs v0.3.3 amendment: ``locked_until > now``, equality is expired, even before the
reaper runs; only an exact-request receipt replays a committed settlement)."""

from __future__ import annotations

import pytest
from conformance_support import (
    SETTLE_VERBS,
    SETTLEMENTS,
    STATE_AFTER,
    counts,
    peek_one,
    send_bodies,
    seqs,
    state_of,
)

from mqlite import OutMessage, errors
from mqlite.testing import run_maintenance_once

LOCK = 30_000


def _one(mq, q, body=b"x", **fields):
    seq = mq.send_one(q, OutMessage(body=body, **fields))
    (m,) = mq.receive(q)
    assert m.seq_number == seq
    return m


# §2.1 ------------------------------------------------------------------------------------


def test_2_1_complete_deletes_the_row(mq, make_queue):
    q = make_queue()
    keep = mq.send_one(q, OutMessage(body=b"keep"))
    (m,) = mq.receive(q)
    assert m.seq_number == keep
    other = mq.send_one(q, OutMessage(body=b"other"))
    assert mq.stats(q).total == 2
    m.complete()
    assert mq.stats(q).total == 1
    assert peek_one(mq, q, keep) is None
    assert state_of(mq, q, other) == "active"


def test_2_1_completed_message_is_never_redelivered(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=1_000)
    m = _one(mq, q)
    mq.complete(q, m.seq_number, m.lock_token)
    clock.advance(60_000)
    run_maintenance_once(mq)
    assert mq.receive(q, max_messages=10) == []
    assert counts(mq, q) == (0, 0, 0, 0, 0, 0)


# §2.2 ------------------------------------------------------------------------------------


def test_2_2a_abandon_returns_to_active_immediately_receivable(mq, make_queue):
    q = make_queue(max_delivery_count=3)
    m = _one(mq, q)
    mq.abandon(q, m.seq_number, m.lock_token, delay_ms=0)
    peeked = peek_one(mq, q, m.seq_number)
    assert peeked.state == "active"
    assert peeked.lock_token == ""
    (again,) = mq.receive(q)
    assert again.seq_number == m.seq_number
    assert again.delivery_count == 2


def test_2_2a_abandon_at_max_delivery_count_dead_letters(mq, make_queue):
    q = make_queue(max_delivery_count=2)
    m = _one(mq, q)
    m.abandon()
    (m,) = mq.receive(q)
    assert m.delivery_count == 2
    m.abandon()
    dead = peek_one(mq, q, m.seq_number)
    assert dead.state == "dead_lettered"
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert mq.receive(q, max_messages=10) == []


def test_2_2a_abandon_keeps_ttl_running(mq, make_queue):
    q = make_queue(default_ttl_ms=60_000)
    m = _one(mq, q)
    before = peek_one(mq, q, m.seq_number).expires_at_ms
    assert before == m.enqueued_at_ms + 60_000
    m.abandon()
    assert peek_one(mq, q, m.seq_number).expires_at_ms == before


def test_2_2b_abandon_with_delay_parks_in_scheduled(mq, make_queue, clock):
    q = make_queue(max_delivery_count=5)
    m = _one(mq, q)
    clock.advance(100)
    mq.abandon(q, m.seq_number, m.lock_token, delay_ms=5_000)
    parked = peek_one(mq, q, m.seq_number)
    assert parked.state == "scheduled"
    assert parked.visible_at_ms == clock.now_ms() + 5_000
    assert counts(mq, q) == (0, 0, 0, 1, 0, 1)
    assert mq.receive(q, max_messages=10) == []

    clock.advance(4_999)
    run_maintenance_once(mq)
    assert state_of(mq, q, m.seq_number) == "scheduled"
    assert mq.receive(q, max_messages=10) == []

    clock.advance(1)
    run_maintenance_once(mq)
    assert state_of(mq, q, m.seq_number) == "active"
    (again,) = mq.receive(q)
    assert again.seq_number == m.seq_number
    assert again.delivery_count == 2


def test_2_2b_abandon_with_negative_delay_is_immediately_active(mq, make_queue):
    q = make_queue()
    m = _one(mq, q)
    mq.abandon(q, m.seq_number, m.lock_token, delay_ms=-5_000)
    assert state_of(mq, q, m.seq_number) == "active"
    assert seqs(mq.receive(q)) == [m.seq_number]


@pytest.mark.parametrize("mode", ["group_fifo", "standard"])
def test_2_2c_backing_off_head_blocks_its_group_other_groups_proceed(mq, make_queue, clock, mode):
    q = make_queue(ordering_mode=mode)
    a1, a2, b1 = mq.send(
        q,
        [
            OutMessage(body=b"a1", group_id="A"),
            OutMessage(body=b"a2", group_id="A"),
            OutMessage(body=b"b1", group_id="B"),
        ],
    )
    got = mq.receive(q, max_messages=10)
    assert seqs(got) == [a1, b1]
    head = got[0]
    head.abandon(delay_ms=10_000)
    assert state_of(mq, q, a1) == "scheduled"

    got[1].complete()
    b2 = mq.send_one(q, OutMessage(body=b"b2", group_id="B"))
    assert seqs(mq.receive(q, max_messages=10)) == [b2]  # A2 never overtakes the parked head

    clock.advance(10_000)
    run_maintenance_once(mq)
    (redelivered,) = mq.receive(q, max_messages=10)
    assert redelivered.seq_number == a1
    assert redelivered.delivery_count == 2
    assert mq.receive(q, max_messages=10) == []  # A2 still waits for the head to settle
    redelivered.complete()
    assert seqs(mq.receive(q, max_messages=10)) == [a2]


def test_2_2c_strict_fifo_backing_off_head_blocks_whole_queue(mq, make_queue, clock):
    q = make_queue(ordering_mode="strict_fifo")
    s1, s2, s3 = mq.send(
        q,
        [
            OutMessage(body=b"1", group_id="A"),
            OutMessage(body=b"2", group_id="B"),
            OutMessage(body=b"3"),
        ],
    )
    (head,) = mq.receive(q, max_messages=10)
    assert head.seq_number == s1
    head.abandon(delay_ms=1_000)
    assert mq.receive(q, max_messages=10) == []
    clock.advance(1_000)
    run_maintenance_once(mq)
    (again,) = mq.receive(q, max_messages=10)
    assert again.seq_number == s1
    again.complete()
    assert seqs(mq.receive(q, max_messages=10)) == [s2]
    assert s3 > s2


def test_2_2c_ungrouped_standard_messages_are_not_held_by_a_backoff(mq, make_queue):
    q = make_queue(ordering_mode="standard")
    s1, s2 = send_bodies(mq, q, [b"1", b"2"])
    (m,) = mq.receive(q, max_messages=1)
    assert m.seq_number == s1
    m.abandon(delay_ms=60_000)
    assert seqs(mq.receive(q, max_messages=10)) == [s2]


# §2.3 ------------------------------------------------------------------------------------


def test_2_3_reject_dead_letters_with_reason_and_description(mq, make_queue):
    q = make_queue()
    m = _one(mq, q)
    mq.reject(q, m.seq_number, m.lock_token, reason="Bad", description="why")
    dead = peek_one(mq, q, m.seq_number)
    assert dead.state == "dead_lettered"
    assert (dead.dead_letter_reason, dead.dead_letter_description) == ("Bad", "why")
    assert dead.lock_token == ""
    assert counts(mq, q) == (0, 0, 0, 0, 1, 1)
    assert mq.peek(q, state="dead_lettered", from_seq=0, max=32)[0].seq_number == m.seq_number


def test_2_3_reject_reason_defaults_to_app_requested(mq, make_queue):
    q = make_queue()
    m = _one(mq, q)
    m.reject()
    dead = peek_one(mq, q, m.seq_number)
    assert dead.state == "dead_lettered"
    assert dead.dead_letter_reason == "AppRequested"
    assert dead.dead_letter_description == ""


def test_2_3_reject_ignores_delivery_count(mq, make_queue):
    q = make_queue(max_delivery_count=10)
    m = _one(mq, q)
    m.reject("Poison", "")
    assert peek_one(mq, q, m.seq_number).delivery_count == 1
    assert peek_one(mq, q, m.seq_number).dead_letter_reason == "Poison"


# §2.4 ------------------------------------------------------------------------------------


def test_2_4a_defer_then_receive_deferred_relocks(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=LOCK)
    m = _one(mq, q)
    mq.defer(q, m.seq_number, m.lock_token)
    deferred = peek_one(mq, q, m.seq_number)
    assert deferred.state == "deferred"
    assert deferred.delivery_count == 1
    assert counts(mq, q) == (0, 0, 1, 0, 0, 1)
    assert mq.receive(q, max_messages=10) == []

    clock.advance(500)
    (again,) = mq.receive_deferred(q, [m.seq_number])
    assert again.seq_number == m.seq_number
    assert again.delivery_count == 2
    assert again.lock_token and again.lock_token != m.lock_token
    assert again.locked_until_ms == clock.now_ms() + LOCK
    assert state_of(mq, q, m.seq_number) == "locked"
    again.complete()
    assert mq.stats(q).total == 0


def test_2_4a_receive_deferred_skips_seqs_that_are_not_deferred(mq, make_queue, open_mq):
    q = make_queue()
    other = make_queue("other")
    active = mq.send_one(q, OutMessage(body=b"active"))
    d = mq.send_one(q, OutMessage(body=b"deferred"))
    elsewhere = mq.send_one(other, OutMessage(body=b"elsewhere"))
    got = mq.receive(q, max_messages=10)
    by_seq = {m.seq_number: m for m in got}
    by_seq[d].defer()
    by_seq[active].abandon()
    (od,) = mq.receive(other)
    od.defer()

    result = mq.receive_deferred(q, [active, 999_999, elsewhere, d])
    assert seqs(result) == [d]
    assert state_of(mq, other, elsewhere) == "deferred"
    assert mq.receive_deferred(q, []) == []


def test_2_4a_receive_deferred_keeps_request_order(mq, make_queue):
    q = make_queue()
    s = send_bodies(mq, q, [b"1", b"2", b"3"])
    for m in mq.receive(q, max_messages=3):
        m.defer()
    got = mq.receive_deferred(q, [s[2], s[0], s[1]])
    assert seqs(got) == [s[2], s[0], s[1]]


@pytest.mark.parametrize("mode", ["group_fifo", "standard"])
def test_2_4b_deferred_head_blocks_its_group_other_groups_proceed(mq, make_queue, mode):
    q = make_queue(ordering_mode=mode)
    a1, a2, b1 = mq.send(
        q,
        [
            OutMessage(body=b"a1", group_id="A"),
            OutMessage(body=b"a2", group_id="A"),
            OutMessage(body=b"b1", group_id="B"),
        ],
    )
    (head,) = mq.receive(q, max_messages=1)
    assert head.seq_number == a1
    head.defer()
    assert seqs(mq.receive(q, max_messages=10)) == [b1]
    assert mq.receive(q, max_messages=10) == []  # A2 is held behind the deferred head

    (again,) = mq.receive_deferred(q, [a1])
    assert mq.receive(q, max_messages=10) == []  # retrieved but not yet settled: still held
    again.complete()
    assert seqs(mq.receive(q, max_messages=10)) == [a2]


def test_2_4b_strict_fifo_deferred_head_blocks_whole_queue(mq, make_queue):
    q = make_queue(ordering_mode="strict_fifo")
    s1, s2 = mq.send(q, [OutMessage(body=b"1", group_id="A"), OutMessage(body=b"2", group_id="B")])
    (head,) = mq.receive(q, max_messages=10)
    head.defer()
    assert mq.receive(q, max_messages=10) == []
    (again,) = mq.receive_deferred(q, [s1])
    again.complete()
    assert seqs(mq.receive(q, max_messages=10)) == [s2]


def test_2_4b_ungrouped_standard_messages_are_not_blocked_by_a_deferral(mq, make_queue):
    q = make_queue(ordering_mode="standard")
    s1, s2 = send_bodies(mq, q, [b"1", b"2"])
    (m,) = mq.receive(q, max_messages=1)
    assert m.seq_number == s1
    m.defer()
    assert seqs(mq.receive(q, max_messages=10)) == [s2]


def test_2_4c_reaper_never_reclaims_deferred_rows(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=1_000)
    m = _one(mq, q)
    m.defer()
    for _ in range(3):
        clock.advance(24 * 3_600_000)
        run_maintenance_once(mq)
    assert state_of(mq, q, m.seq_number) == "deferred"
    assert mq.receive(q, max_messages=10) == []
    lost = mq.peek(q, state="deferred", from_seq=0, max=32)
    assert seqs(lost) == [m.seq_number]
    assert lost[0].state == "deferred"


# §2.5 ------------------------------------------------------------------------------------


def test_2_5_renew_extends_the_lock(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=LOCK)
    m = _one(mq, q)
    t0 = clock.now_ms()
    assert m.locked_until_ms == t0 + LOCK
    clock.advance(10_000)
    mq.renew(q, m.seq_number, m.lock_token)
    assert peek_one(mq, q, m.seq_number).locked_until_ms == t0 + 10_000 + LOCK

    clock.advance(LOCK - 1)  # past the original deadline, before the renewed one
    run_maintenance_once(mq)
    assert state_of(mq, q, m.seq_number) == "locked"
    mq.complete(q, m.seq_number, m.lock_token)
    assert mq.stats(q).total == 0


def test_2_5_renew_via_bound_method(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=LOCK)
    m = _one(mq, q)
    clock.advance(1_000)
    m.renew()
    assert peek_one(mq, q, m.seq_number).locked_until_ms == clock.now_ms() + LOCK


def test_2_5_renew_with_wrong_token_is_lock_lost(mq, make_queue):
    q = make_queue(lock_duration_ms=LOCK)
    m = _one(mq, q)
    with pytest.raises(errors.LockLost):
        mq.renew(q, m.seq_number, "0" * 32)
    assert peek_one(mq, q, m.seq_number).locked_until_ms == m.locked_until_ms


def test_2_5_renew_never_revives_an_expired_lease(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=LOCK, max_delivery_count=5)
    m = _one(mq, q)
    clock.advance(LOCK)  # exactly the deadline: already expired
    with pytest.raises(errors.LockLost):
        mq.renew(q, m.seq_number, m.lock_token)
    assert peek_one(mq, q, m.seq_number).locked_until_ms == m.locked_until_ms
    run_maintenance_once(mq)
    assert state_of(mq, q, m.seq_number) == "active"
    (again,) = mq.receive(q)
    assert again.delivery_count == 2


def test_2_5_renew_never_shortens_a_lease(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=LOCK)
    m = _one(mq, q)
    clock.advance(-20_000)  # a clock going backwards
    mq.renew(q, m.seq_number, m.lock_token)
    assert peek_one(mq, q, m.seq_number).locked_until_ms == m.locked_until_ms


def test_2_5_renew_on_unknown_queue_is_queue_not_found(mq, make_queue):
    q = make_queue()
    m = _one(mq, q)
    with pytest.raises(errors.QueueNotFound):
        mq.renew("nope", m.seq_number, m.lock_token)


# §2.6 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", sorted(SETTLE_VERBS))
def test_2_6a_settle_with_wrong_token_is_lock_lost(mq, make_queue, verb):
    q = make_queue()
    m = _one(mq, q)
    with pytest.raises(errors.LockLost) as exc:
        SETTLE_VERBS[verb](mq, q, m.seq_number, "f" * 32)
    assert exc.value.code == "lock_lost"
    assert exc.value.http_status == 409
    untouched = peek_one(mq, q, m.seq_number)
    assert untouched.state == "locked"
    assert untouched.locked_until_ms == m.locked_until_ms
    mq.complete(q, m.seq_number, m.lock_token)  # the real holder still can


@pytest.mark.parametrize("verb", sorted(SETTLE_VERBS))
def test_2_6a_settle_with_empty_token_is_lock_lost(mq, make_queue, verb):
    q = make_queue()
    m = _one(mq, q)
    with pytest.raises(errors.LockLost):
        SETTLE_VERBS[verb](mq, q, m.seq_number, "")
    assert state_of(mq, q, m.seq_number) == "locked"


@pytest.mark.parametrize("verb", sorted(SETTLE_VERBS))
def test_2_6a_settle_with_expired_lease_is_lock_lost_even_before_reaper(
    mq, make_queue, clock, verb
):
    q = make_queue(lock_duration_ms=LOCK, max_delivery_count=5)
    m = _one(mq, q)
    clock.advance(LOCK)  # locked_until == now counts as expired
    with pytest.raises(errors.LockLost):
        SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)
    untouched = peek_one(mq, q, m.seq_number)
    assert untouched.state == "locked"  # the reaper has not run: nothing moved
    assert untouched.locked_until_ms == m.locked_until_ms
    run_maintenance_once(mq)
    assert state_of(mq, q, m.seq_number) == "active"


@pytest.mark.parametrize("verb", sorted(SETTLE_VERBS))
def test_2_6a_settle_one_ms_before_the_deadline_succeeds(mq, make_queue, clock, verb):
    q = make_queue(lock_duration_ms=LOCK, max_delivery_count=5)
    m = _one(mq, q)
    clock.advance(LOCK - 1)
    SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)
    assert state_of(mq, q, m.seq_number) == STATE_AFTER[verb]


@pytest.mark.parametrize("verb", sorted(SETTLE_VERBS))
def test_2_6a_settle_after_reaper_cleared_the_token_is_lock_lost(mq, make_queue, clock, verb):
    q = make_queue(lock_duration_ms=LOCK, max_delivery_count=5)
    m = _one(mq, q)
    clock.advance(LOCK + 1)
    run_maintenance_once(mq)
    with pytest.raises(errors.LockLost):
        SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)
    assert state_of(mq, q, m.seq_number) == "active"


@pytest.mark.parametrize("verb", sorted(SETTLE_VERBS))
def test_2_6a_old_token_after_redelivery_is_lock_lost(mq, make_queue, clock, verb):
    q = make_queue(lock_duration_ms=LOCK, max_delivery_count=5)
    old = _one(mq, q)
    clock.advance(LOCK)
    run_maintenance_once(mq)
    (new,) = mq.receive(q)
    with pytest.raises(errors.LockLost):
        SETTLE_VERBS[verb](mq, q, old.seq_number, old.lock_token)
    still = peek_one(mq, q, new.seq_number)
    assert still.state == "locked"
    assert still.locked_until_ms == new.locked_until_ms
    new.complete()


@pytest.mark.parametrize("verb", SETTLEMENTS)
def test_2_6a_settle_after_another_settle_is_lock_lost(mq, make_queue, verb):
    q = make_queue(max_delivery_count=5)
    m = _one(mq, q)
    if verb == "complete":
        m.defer()
    else:
        m.complete()
    with pytest.raises(errors.LockLost):
        SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)


@pytest.mark.parametrize("verb", SETTLEMENTS)
def test_2_6a_settle_on_unknown_queue_is_lock_lost(mq, make_queue, verb):
    q = make_queue()
    m = _one(mq, q)
    with pytest.raises(errors.LockLost):
        SETTLE_VERBS[verb](mq, "no-such-queue", m.seq_number, m.lock_token)
    assert state_of(mq, q, m.seq_number) == "locked"


@pytest.mark.parametrize("verb", SETTLEMENTS)
def test_2_6b_exact_replay_succeeds(mq, make_queue, clock, verb):
    q = make_queue(max_delivery_count=5)
    m = _one(mq, q)
    SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)
    after = counts(mq, q)
    clock.advance(1_000)
    SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)  # the response was "lost": retry
    assert counts(mq, q) == after  # success, and no second effect
    assert state_of(mq, q, m.seq_number) == STATE_AFTER[verb]


@pytest.mark.parametrize("verb", SETTLEMENTS)
def test_2_6b_exact_replay_after_lease_expiry_succeeds(mq, make_queue, clock, verb):
    q = make_queue(lock_duration_ms=LOCK, max_delivery_count=5)
    m = _one(mq, q)
    SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)
    clock.advance(LOCK * 10)  # well past the original lease, within the 30 min receipt TTL
    run_maintenance_once(mq)
    SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)
    assert state_of(mq, q, m.seq_number) == STATE_AFTER[verb]


@pytest.mark.parametrize("verb", SETTLEMENTS)
def test_2_6b_replay_after_receipt_ttl_is_lock_lost(mq, make_queue, clock, verb):
    q = make_queue(max_delivery_count=5)
    m = _one(mq, q)
    SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)
    clock.advance(30 * 60_000 - 1)
    SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)  # still inside the receipt TTL
    clock.advance(1)  # receipt expires_at == now: expired even before any janitor pass
    with pytest.raises(errors.LockLost):
        SETTLE_VERBS[verb](mq, q, m.seq_number, m.lock_token)


def test_2_6b_abandon_replay_does_not_touch_the_new_lock(mq, make_queue):
    q = make_queue(max_delivery_count=5)
    old = _one(mq, q)
    old.abandon()
    (new,) = mq.receive(q)
    old.abandon()  # exact replay: success, but no new effect
    still = peek_one(mq, q, new.seq_number)
    assert still.state == "locked"
    assert still.delivery_count == 2
    new.complete()
    assert mq.stats(q).total == 0


def test_2_6b_reject_default_reason_replays_as_app_requested(mq, make_queue):
    q = make_queue()
    m = _one(mq, q)
    mq.reject(q, m.seq_number, m.lock_token, reason="", description="d")
    mq.reject(q, m.seq_number, m.lock_token, reason="AppRequested", description="d")
    assert peek_one(mq, q, m.seq_number).dead_letter_reason == "AppRequested"


# §2.7 ------------------------------------------------------------------------------------


def test_2_7_complete_batch_settles_each_item_fenced(mq, make_queue):
    q = make_queue()
    s = send_bodies(mq, q, [b"1", b"2", b"3"])
    msgs = mq.receive(q, max_messages=3)
    items = [(m.seq_number, m.lock_token) for m in msgs]
    items[1] = (items[1][0], "0" * 32)  # a stale token in the middle
    results = mq.complete_batch(q, items)
    assert [(r.seq_number, r.ok) for r in results] == [(s[0], True), (s[1], False), (s[2], True)]
    assert state_of(mq, q, s[1]) == "locked"
    assert mq.stats(q).total == 1


def test_2_7_complete_batch_replay_is_idempotent(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=LOCK)
    send_bodies(mq, q, [b"1", b"2"])
    items = [(m.seq_number, m.lock_token) for m in mq.receive(q, max_messages=2)]
    assert [r.ok for r in mq.complete_batch(q, items)] == [True, True]
    clock.advance(LOCK + 5_000)  # replay after the lease expired, within the receipt TTL
    assert [r.ok for r in mq.complete_batch(q, items)] == [True, True]


def test_2_7_complete_batch_and_single_complete_share_receipts(mq, make_queue):
    q = make_queue()
    send_bodies(mq, q, [b"1", b"2"])
    a, b = mq.receive(q, max_messages=2)
    mq.complete(q, a.seq_number, a.lock_token)
    assert [r.ok for r in mq.complete_batch(q, [(a.seq_number, a.lock_token)])] == [True]
    assert [r.ok for r in mq.complete_batch(q, [(b.seq_number, b.lock_token)])] == [True]
    mq.complete(q, b.seq_number, b.lock_token)  # replay of the batch item via single Complete


def test_2_7_complete_batch_is_keyed_by_seq_token_pair(mq, make_queue):
    q = make_queue(max_delivery_count=5)
    old = _one(mq, q)
    old.abandon()
    (new,) = mq.receive(q)
    results = mq.complete_batch(
        q, [(old.seq_number, old.lock_token), (new.seq_number, new.lock_token)]
    )
    assert [r.ok for r in results] == [False, True]


def test_2_7_complete_batch_does_not_vouch_for_a_pair_with_its_own_receipt(mq, make_queue):
    q = make_queue()
    m = _one(mq, q)
    results = mq.complete_batch(q, [(m.seq_number, m.lock_token), (m.seq_number, "e" * 32)])
    assert [r.ok for r in results] == [True, False]
    results = mq.complete_batch(q, [(m.seq_number, "e" * 32), (m.seq_number, m.lock_token)])
    assert [r.ok for r in results] == [False, True]


def test_2_7_complete_batch_duplicate_pairs_are_all_ok(mq, make_queue):
    q = make_queue()
    m = _one(mq, q)
    results = mq.complete_batch(q, [(m.seq_number, m.lock_token)] * 3)
    assert [r.ok for r in results] == [True, True, True]


def test_2_7_complete_batch_receipt_is_verb_specific(mq, make_queue):
    q = make_queue(max_delivery_count=5)
    m = _one(mq, q)
    m.defer()  # a "deferred" receipt for (seq, token)
    assert [r.ok for r in mq.complete_batch(q, [(m.seq_number, m.lock_token)])] == [False]
    assert state_of(mq, q, m.seq_number) == "deferred"


def test_2_7_complete_batch_expired_lease_is_not_ok(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=LOCK)
    m = _one(mq, q)
    clock.advance(LOCK)
    assert [r.ok for r in mq.complete_batch(q, [(m.seq_number, m.lock_token)])] == [False]
    assert state_of(mq, q, m.seq_number) == "locked"


def test_2_7_complete_batch_beyond_the_bind_parameter_limit(mq, make_queue):
    q = make_queue(lock_duration_ms=3_600_000)
    send_bodies(mq, q, [b"%d" % i for i in range(1_200)])
    held = []
    while True:
        got = mq.receive(q, max_messages=256)
        if not got:
            break
        held.extend(got)
    assert len(held) == 1_200
    items = [(m.seq_number, m.lock_token) for m in held]
    items.insert(600, (held[0].seq_number, "1" * 32))
    results = mq.complete_batch(q, items)
    assert len(results) == 1_201
    assert [r.seq_number for r in results] == [s for s, _ in items]
    assert sum(r.ok for r in results) == 1_200
    assert results[600].ok is False
    assert mq.stats(q).total == 0


def test_2_7_complete_batch_empty_and_unknown_queue(mq, make_queue):
    q = make_queue()
    m = _one(mq, q)
    assert list(mq.complete_batch(q, [])) == []
    results = mq.complete_batch("no-such-queue", [(m.seq_number, m.lock_token)])
    assert [(r.seq_number, r.ok) for r in results] == [(m.seq_number, False)]
    assert state_of(mq, q, m.seq_number) == "locked"
    assert [r.ok for r in mq.complete_batch(q, [(m.seq_number, "")])] == [False]


# §2.8 ------------------------------------------------------------------------------------


def test_2_8a_renew_batch_renews_each_item_fenced_on_its_token(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=LOCK)
    send_bodies(mq, q, [b"1", b"2", b"3"])
    msgs = mq.receive(q, max_messages=3)
    clock.advance(10_000)
    items = [(m.seq_number, m.lock_token) for m in msgs]
    items[1] = (items[1][0], "0" * 32)
    results = mq.renew_batch(q, items)
    expected = clock.now_ms() + LOCK
    assert [r.seq_number for r in results] == [m.seq_number for m in msgs]
    assert [r.ok for r in results] == [True, False, True]
    assert results[0].locked_until_ms == expected
    assert results[2].locked_until_ms == expected
    assert results[1].locked_until_ms == 0
    assert peek_one(mq, q, msgs[0].seq_number).locked_until_ms == expected
    assert peek_one(mq, q, msgs[1].seq_number).locked_until_ms == msgs[1].locked_until_ms


def test_2_8a_renew_batch_unknown_queue_is_queue_not_found(mq, make_queue):
    q = make_queue()
    m = _one(mq, q)
    with pytest.raises(errors.QueueNotFound):
        mq.renew_batch("no-such-queue", [(m.seq_number, m.lock_token)])


def test_2_8b_renew_batch_expired_lease_is_not_ok_and_not_revived(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=LOCK)
    send_bodies(mq, q, [b"1", b"2"])
    a, b = mq.receive(q, max_messages=2)
    clock.advance(LOCK - 1)
    mq.renew(q, b.seq_number, b.lock_token)  # b stays live, a reaches its deadline
    clock.advance(1)
    results = mq.renew_batch(q, [(a.seq_number, a.lock_token), (b.seq_number, b.lock_token)])
    assert [r.ok for r in results] == [False, True]
    assert results[0].locked_until_ms == 0
    assert results[1].locked_until_ms == clock.now_ms() + LOCK
    assert results[1].locked_until_ms > clock.now_ms()
    assert peek_one(mq, q, a.seq_number).locked_until_ms == a.locked_until_ms
    run_maintenance_once(mq)
    assert state_of(mq, q, a.seq_number) == "active"
    assert state_of(mq, q, b.seq_number) == "locked"


def test_2_8c_renewal_never_shortens_a_lease(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=LOCK)
    m = _one(mq, q)
    clock.advance(-20_000)
    (r,) = mq.renew_batch(q, [(m.seq_number, m.lock_token)])
    assert r.ok is True
    assert r.locked_until_ms == m.locked_until_ms
    clock.advance(25_000)
    (r,) = mq.renew_batch(q, [(m.seq_number, m.lock_token)])
    assert r.locked_until_ms == clock.now_ms() + LOCK
    assert peek_one(mq, q, m.seq_number).locked_until_ms == r.locked_until_ms


def test_2_8d_renew_batch_over_512_items_is_invalid_argument(mq, make_queue):
    q = make_queue()
    m = _one(mq, q)
    items = [(m.seq_number, m.lock_token)] + [(i, "0" * 32) for i in range(10_000, 10_512)]
    assert len(items) == 513
    with pytest.raises(errors.InvalidArgument) as exc:
        mq.renew_batch(q, items)
    assert exc.value.http_status == 400
    assert exc.value.code == "invalid_argument"
    results = mq.renew_batch(q, items[:512])
    assert len(results) == 512
    assert results[0].ok is True
    assert not any(r.ok for r in results[1:])

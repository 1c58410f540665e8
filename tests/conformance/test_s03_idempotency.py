"""Conformance §3: idempotency and at-least-once (crash recovery on open, receipts bound to
the exact request, idempotent receive, message integrity under concurrent drain)."""

from __future__ import annotations

import hashlib
import random
import threading

import pytest
from conformance_support import counts, peek_one, send_bodies, seqs, state_of

from mqlite import OutMessage, QueueConfig, errors
from mqlite.testing import run_maintenance_once


def test_3_1_open_resets_every_locked_row(open_mq, clock):
    mq = open_mq()
    mq.create_queue("q", QueueConfig(lock_duration_ms=10_000))
    s = send_bodies(mq, "q", [b"1", b"2", b"3", b"4"])
    early = mq.receive("q", max_messages=2)
    clock.advance(10_000)  # the first two are expired but not reaped
    late = mq.receive("q", max_messages=2)  # the last two hold live locks
    assert seqs(early) == s[:2] and seqs(late) == s[2:]
    assert mq.stats("q").locked == 4
    mq.close()

    mq2 = open_mq()
    assert counts(mq2, "q") == (4, 0, 0, 0, 0, 4)
    for seq in s:
        m = peek_one(mq2, "q", seq)
        assert (m.state, m.lock_token, m.delivery_count) == ("active", "", 1)
    for m in early + late:
        with pytest.raises(errors.LockLost):
            mq2.complete("q", m.seq_number, m.lock_token)
    got = mq2.receive("q", max_messages=10)
    assert seqs(got) == s
    assert all(m.delivery_count == 2 for m in got)


def test_3_1_crash_recovery_respects_max_delivery(open_mq):
    mq = open_mq()
    mq.create_queue("q", QueueConfig(max_delivery_count=2))
    last, spare = send_bodies(mq, "q", [b"last", b"spare"])
    (m,) = mq.receive("q", max_messages=1)
    m.abandon()
    got = mq.receive("q", max_messages=2)
    assert {(x.seq_number, x.delivery_count) for x in got} == {(last, 2), (spare, 1)}
    mq.close()

    mq2 = open_mq()
    dead = peek_one(mq2, "q", last)
    assert dead.state == "dead_lettered"
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert state_of(mq2, "q", spare) == "active"
    assert counts(mq2, "q") == (1, 0, 0, 0, 1, 2)
    assert seqs(mq2.receive("q", max_messages=10)) == [spare]  # no extra delivery of `last`


def test_3_2_receipt_is_bound_to_its_message(mq, make_queue):
    q = make_queue()
    a, b = send_bodies(mq, q, [b"a", b"b"])
    ma, mb = mq.receive(q, max_messages=2)
    ma.complete()
    with pytest.raises(errors.LockLost):
        mq.complete(q, b, ma.lock_token)  # A's token (with a live receipt) on B
    assert state_of(mq, q, b) == "locked"
    mb.complete()
    assert a < b


def test_3_2_receipt_is_bound_to_its_queue(mq, make_queue):
    q = make_queue("q1")
    make_queue("q2")
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    m.complete()
    with pytest.raises(errors.LockLost):
        mq.complete("q2", seq, m.lock_token)
    mq.complete(q, seq, m.lock_token)  # the exact request still replays


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("abandon", "complete"),
        ("complete", "abandon"),
        ("defer", "complete"),
        ("reject", "defer"),
        ("defer", "reject"),
        ("abandon", "reject"),
    ],
)
def test_3_2_receipts_are_verb_specific(mq, make_queue, first, second):
    q = make_queue(max_delivery_count=5)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    getattr(m, first)()
    before = peek_one(mq, q, seq)
    with pytest.raises(errors.LockLost):
        getattr(m, second)()
    after = peek_one(mq, q, seq)
    if before is None:
        assert after is None
    else:
        assert (after.state, after.delivery_count) == (before.state, before.delivery_count)


def test_3_2_abandon_receipt_is_bound_to_its_delay(mq, make_queue):
    q = make_queue(max_delivery_count=5)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    mq.abandon(q, seq, m.lock_token, delay_ms=0)
    with pytest.raises(errors.LockLost):
        mq.abandon(q, seq, m.lock_token, delay_ms=5_000)
    assert state_of(mq, q, seq) == "active"  # the changed backoff was not applied
    mq.abandon(q, seq, m.lock_token, delay_ms=0)


def test_3_2_reject_receipt_is_bound_to_reason_and_description(mq, make_queue):
    q = make_queue()
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    mq.reject(q, seq, m.lock_token, reason="A", description="x")
    with pytest.raises(errors.LockLost):
        mq.reject(q, seq, m.lock_token, reason="B", description="x")
    with pytest.raises(errors.LockLost):
        mq.reject(q, seq, m.lock_token, reason="A", description="y")
    mq.reject(q, seq, m.lock_token, reason="A", description="x")
    dead = peek_one(mq, q, seq)
    assert (dead.dead_letter_reason, dead.dead_letter_description) == ("A", "x")


def test_3_3_receive_attempt_replays_same_messages_and_tokens(mq, make_queue):
    q = make_queue()
    s = send_bodies(mq, q, [b"1", b"2", b"3"])
    first = mq.receive(q, max_messages=2, attempt_id="a1")
    again = mq.receive(q, max_messages=2, attempt_id="a1")
    assert seqs(first) == s[:2]
    assert [(m.seq_number, m.lock_token, m.delivery_count, m.body) for m in again] == [
        (m.seq_number, m.lock_token, m.delivery_count, m.body) for m in first
    ]
    assert counts(mq, q)[:2] == (1, 2)  # the replay claimed nothing
    assert all(peek_one(mq, q, x).delivery_count == 1 for x in s[:2])

    other = mq.receive(q, max_messages=2, attempt_id="a2")
    assert seqs(other) == [s[2]]
    for m in again + other:
        m.complete()  # replayed tokens are the live ones
    assert mq.stats(q).total == 0


def test_3_3_replay_ignores_the_new_requests_max_and_settlement(mq, make_queue):
    q = make_queue()
    send_bodies(mq, q, [b"1", b"2", b"3"])
    first = mq.receive(q, max_messages=2, attempt_id="a1")
    first[0].complete()
    again = mq.receive(q, max_messages=1, attempt_id="a1")
    assert [(m.seq_number, m.lock_token) for m in again] == [
        (m.seq_number, m.lock_token) for m in first
    ]
    assert mq.stats(q).active == 1


def test_3_3_empty_result_is_not_recorded(mq, make_queue):
    q = make_queue()
    assert mq.receive(q, max_messages=5, attempt_id="a1") == []
    seq = mq.send_one(q, OutMessage(body=b"x"))
    assert seqs(mq.receive(q, max_messages=5, attempt_id="a1")) == [seq]


def test_3_3_attempt_ids_are_per_queue(mq, make_queue):
    q1, q2 = make_queue("q1"), make_queue("q2")
    s1 = mq.send_one(q1, OutMessage(body=b"1"))
    s2 = mq.send_one(q2, OutMessage(body=b"2"))
    assert seqs(mq.receive(q1, attempt_id="same")) == [s1]
    assert seqs(mq.receive(q2, attempt_id="same")) == [s2]


def test_3_3_attempt_record_expires_after_max_of_lock_and_five_minutes(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=10_000, max_delivery_count=10)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (first,) = mq.receive(q, attempt_id="a1")
    clock.advance(5 * 60_000 - 1)
    run_maintenance_once(mq)  # the lock is reaped; the attempt record is still live
    (replay,) = mq.receive(q, attempt_id="a1")
    assert (replay.seq_number, replay.lock_token, replay.delivery_count) == (
        seq,
        first.lock_token,
        1,
    )
    clock.advance(1)
    (fresh,) = mq.receive(q, attempt_id="a1")
    assert fresh.seq_number == seq
    assert fresh.delivery_count == 2
    assert fresh.lock_token != first.lock_token


def test_3_3_receive_and_delete_grants_no_lease_even_on_replay(mq, make_queue):
    q = make_queue()
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q, mode="receive_and_delete", attempt_id="rd")
    assert (m.seq_number, m.body, m.lock_token, m.locked_until_ms) == (seq, b"x", "", 0)
    assert m.delivery_count == 1
    assert mq.stats(q).total == 0
    (again,) = mq.receive(q, mode="receive_and_delete", attempt_id="rd")
    assert (again.seq_number, again.lock_token, again.locked_until_ms) == (seq, "", 0)


def test_3_4_message_integrity_under_concurrent_drain(mq, make_queue):
    q = make_queue(lock_duration_ms=600_000, max_delivery_count=1_000_000)
    n = 1_000
    rng = random.Random(42)
    for start in range(0, n, 100):
        batch = []
        for i in range(start + 1, start + 101):
            body = rng.randbytes(rng.randint(64, 255))
            props = {"seq": str(i), "sha256": hashlib.sha256(body).hexdigest()}
            batch.append(OutMessage(body=body, properties=props))
        mq.send(q, batch)

    lock = threading.Lock()
    completed: dict[str, int] = {}
    corrupt: list[str] = []
    abandoned: set[str] = set()
    failures: list[BaseException] = []

    def consumer(worker: int) -> None:
        local = random.Random(worker)
        try:
            for _ in range(10_000):
                with lock:
                    if len(completed) >= n:
                        return
                got = mq.receive(q, max_messages=64, wait_ms=0)
                for m in got:
                    key = m.properties["seq"]
                    if hashlib.sha256(m.body).hexdigest() != m.properties["sha256"]:
                        with lock:
                            corrupt.append(key)
                    with lock:
                        retry = key not in abandoned and local.random() < 0.03
                        if retry:
                            abandoned.add(key)
                    if retry:
                        m.abandon()
                        continue
                    m.complete()
                    with lock:
                        completed[key] = completed.get(key, 0) + 1
        except BaseException as exc:  # surfaced in the main thread
            failures.append(exc)

    threads = [threading.Thread(target=consumer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "consumers did not finish"
    assert failures == []
    assert corrupt == []
    assert sorted(completed, key=int) == [str(i) for i in range(1, n + 1)]
    assert set(completed.values()) == {1}
    assert mq.stats(q).total == 0
    assert abandoned, "the workload should include some abandons"

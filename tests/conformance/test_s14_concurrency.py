"""Conformance §14: concurrency invariants, with real threads on the FakeClock (no sleeps:
threads meet at barriers/events, and every join is bounded)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from conformance_support import send_bodies, seqs

import mqlite
from mqlite import OutMessage, QueueConfig, errors, testing
from mqlite.testing import run_maintenance_once

JOIN_S = 60


def _run(threads):
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=JOIN_S)
    assert not any(t.is_alive() for t in threads), "a worker thread did not finish"


def test_14_1_concurrent_consumers_never_share_a_live_locked_message(mq, make_queue):
    q = make_queue(lock_duration_ms=3_600_000)
    n = 600
    send_bodies(mq, q, [b"%d" % i for i in range(n)])
    claimed: list[list[int]] = [[] for _ in range(8)]
    failures: list[BaseException] = []
    barrier = threading.Barrier(8)

    def consumer(w: int) -> None:
        try:
            barrier.wait(timeout=JOIN_S)
            while True:
                got = mq.receive(q, max_messages=7)
                if not got:
                    return
                claimed[w].extend(m.seq_number for m in got)  # held, never settled
        except BaseException as exc:
            failures.append(exc)

    _run([threading.Thread(target=consumer, args=(w,)) for w in range(8)])
    assert failures == []
    everything = [s for part in claimed for s in part]
    assert len(everything) == n
    assert len(set(everything)) == n  # nobody received a message another one holds
    assert mq.stats(q).locked == n


def test_14_2_exactly_one_settlement_winner_after_expiry_reap_redelivery(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=1_000, max_delivery_count=100)
    n = 40
    send_bodies(mq, q, [b"%d" % i for i in range(n)])
    old = {m.seq_number: m for m in mq.receive(q, max_messages=n)}
    clock.advance(1_000)
    run_maintenance_once(mq)
    new = {m.seq_number: m for m in mq.receive(q, max_messages=n)}
    assert set(old) == set(new)

    outcomes: dict[tuple[int, str], str] = {}
    failures: list[BaseException] = []
    barrier = threading.Barrier(2)

    def settle(holder: str, msgs: dict) -> None:
        try:
            barrier.wait(timeout=JOIN_S)
            for seq, m in msgs.items():
                try:
                    m.complete()
                    outcomes[(seq, holder)] = "ok"
                except errors.LockLost:
                    outcomes[(seq, holder)] = "lock_lost"
        except BaseException as exc:
            failures.append(exc)

    _run(
        [
            threading.Thread(target=settle, args=("old", old)),
            threading.Thread(target=settle, args=("new", new)),
        ]
    )
    assert failures == []
    for seq in old:
        assert outcomes[(seq, "old")] == "lock_lost"
        assert outcomes[(seq, "new")] == "ok"
    assert mq.stats(q).total == 0


def test_14_2_old_and_new_holder_race_every_verb(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=1_000, max_delivery_count=100)
    verbs = ["complete", "abandon", "reject", "defer", "renew"]
    send_bodies(mq, q, [v.encode() for v in verbs])
    old = mq.receive(q, max_messages=len(verbs))
    clock.advance(1_000)
    run_maintenance_once(mq)
    new = {m.seq_number: m for m in mq.receive(q, max_messages=len(verbs))}
    for m_old, verb in zip(old, verbs, strict=True):
        m_new = new[m_old.seq_number]
        results: dict[str, str] = {}
        barrier = threading.Barrier(2)

        def act(name, m, verb=verb, barrier=barrier, results=results):
            barrier.wait(timeout=JOIN_S)
            try:
                getattr(m, verb)()
                results[name] = "ok"
            except errors.LockLost:
                results[name] = "lock_lost"

        _run(
            [
                threading.Thread(target=act, args=("old", m_old)),
                threading.Thread(target=act, args=("new", m_new)),
            ]
        )
        assert results == {"old": "lock_lost", "new": "ok"}, verb


def test_14_3_completed_message_is_never_delivered_again(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=1_000, max_delivery_count=1_000)
    n = 400
    send_bodies(mq, q, [b"%d" % i for i in range(n)])
    deliveries: Counter[int] = Counter()
    completed: set[int] = set()
    lock = threading.Lock()
    failures: list[BaseException] = []

    def consumer() -> None:
        try:
            while True:
                got = mq.receive(q, max_messages=16)
                if not got:
                    return
                for m in got:
                    with lock:
                        assert m.seq_number not in completed, "a completed message came back"
                        deliveries[m.seq_number] += 1
                    m.complete()
                    with lock:
                        completed.add(m.seq_number)
        except BaseException as exc:
            failures.append(exc)

    _run([threading.Thread(target=consumer) for _ in range(6)])
    assert failures == []
    assert len(completed) == n
    assert set(deliveries.values()) == {1}
    clock.advance(3_600_000)
    run_maintenance_once(mq)
    assert mq.receive(q, max_messages=256) == []
    assert mq.stats(q).total == 0


def test_14_4_every_message_sent_is_eventually_completed(mq, make_queue):
    q = make_queue(lock_duration_ms=600_000, max_delivery_count=1_000_000)
    producers, per_producer = 4, 250
    total = producers * per_producer
    completed: Counter[bytes] = Counter()
    lock = threading.Lock()
    failures: list[BaseException] = []
    produced = threading.Event()
    done_producers = Counter()

    def producer(p: int) -> None:
        try:
            for i in range(0, per_producer, 10):
                mq.send(q, [OutMessage(body=b"%d-%d" % (p, i + j)) for j in range(10)])
            with lock:
                done_producers["n"] += 1
                if done_producers["n"] == producers:
                    produced.set()
        except BaseException as exc:
            failures.append(exc)
            produced.set()

    def consumer(c: int) -> None:
        abandon_next = c % 2 == 0
        try:
            for _ in range(100_000):
                got = mq.receive(q, max_messages=32)
                if not got:
                    with lock:
                        if produced.is_set() and sum(completed.values()) >= total:
                            return
                    if failures:
                        return
                    continue
                for m in got:
                    if abandon_next and m.delivery_count == 1 and m.seq_number % 17 == 0:
                        m.abandon()
                        continue
                    m.complete()
                    with lock:
                        completed[m.body] += 1
        except BaseException as exc:
            failures.append(exc)

    _run(
        [threading.Thread(target=producer, args=(p,)) for p in range(producers)]
        + [threading.Thread(target=consumer, args=(c,)) for c in range(4)]
    )
    assert failures == []
    assert len(completed) == total
    assert set(completed.values()) == {1}
    assert mq.stats(q).total == 0


def test_14_5_operations_after_close_raise_closed(mq, make_queue):
    q = make_queue()
    mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    mq.close()
    calls = [
        lambda: mq.send_one(q, OutMessage(body=b"y")),
        lambda: mq.send(q, [OutMessage(body=b"y")]),
        lambda: mq.receive(q),
        lambda: mq.complete(q, m.seq_number, m.lock_token),
        lambda: m.complete(),
        lambda: mq.complete_batch(q, [(m.seq_number, m.lock_token)]),
        lambda: mq.renew_batch(q, [(m.seq_number, m.lock_token)]),
        lambda: mq.stats(q),
        lambda: mq.peek(q, from_seq=0, max=32),
        lambda: mq.create_queue("other", QueueConfig()),
        lambda: mq.list_queues(),
        lambda: run_maintenance_once(mq),
        lambda: mq.tx().__enter__(),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(errors.Closed):
            call()
            pytest.fail(f"call #{i} did not raise Closed")


def test_14_5_second_open_while_first_is_open_raises_db_locked(mq, dsn, clock, open_mq):
    mq.create_queue("q", QueueConfig())
    seq = mq.send_one("q", OutMessage(body=b"x"))
    with pytest.raises(errors.DBLocked):
        mqlite.open_embedded(dsn, clock=clock, background=False)
    mq.close()
    reopened = open_mq()  # the file lock is released by close
    assert seqs(reopened.receive("q")) == [seq]


def test_14_5_close_wakes_an_empty_long_poll_with_closed(mq, make_queue):
    q = make_queue()
    outcome: list[object] = []
    started = threading.Event()

    def poller() -> None:
        started.set()
        try:
            outcome.append(mq.receive(q, wait_ms=20_000))
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=poller)
    t.start()
    started.wait(timeout=JOIN_S)
    assert testing.engine(mq).notifier.wait_for_waiters(q, timeout_s=JOIN_S)
    mq.close()
    t.join(timeout=10)  # well under the 20 s poll: close must wake it
    assert not t.is_alive(), "close did not wake the long poll"
    assert len(outcome) == 1 and isinstance(outcome[0], errors.Closed), outcome


def test_14_5_long_poll_is_woken_by_a_send(mq, make_queue):
    q = make_queue()
    outcome: list[object] = []
    started = threading.Event()

    def poller() -> None:
        started.set()
        try:
            outcome.append(mq.receive(q, wait_ms=20_000))
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=poller)
    t.start()
    started.wait(timeout=JOIN_S)
    # The send must land while the poll is PARKED, or this would only test a first claim.
    assert testing.engine(mq).notifier.wait_for_waiters(q, timeout_s=JOIN_S)
    seq = mq.send_one(q, OutMessage(body=b"wake"))
    t.join(timeout=10)
    assert not t.is_alive(), "a send did not wake the long poll"
    assert len(outcome) == 1 and seqs(outcome[0]) == [seq], outcome

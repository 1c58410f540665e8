"""Conformance §13, cancellation, pinned for Python (which has no contexts):

- §13.1/§13.2: a request refused or abandoned before it commits executes nothing.
- §13.3: a storm of failing/raising transactions and refused writes leaves the database
  usable (never wedged, never erased).
- §13.4: an exception inside ``mq.tx()`` rolls back everything, including mqlite's own
  sends, and the database stays usable.
"""

from __future__ import annotations

import random
import sqlite3
import threading

import pytest
from conformance_support import counts, send_bodies

from mqlite import OutMessage, errors
from mqlite.testing import run_maintenance_once


class Boom(Exception):
    pass


def _orders_table(mq):
    with mq.tx() as tx:
        tx.execute("CREATE TABLE IF NOT EXISTS orders_table(id INTEGER PRIMARY KEY)")


def _order_ids(mq):
    with mq.tx() as tx:
        cur = tx.execute("SELECT id FROM orders_table ORDER BY id")
        return [row[0] for row in cur.fetchall()]


def _bodies(mq, q):
    return sorted(m.body for m in mq.peek(q, from_seq=0, max=1000))


def test_13_4_tx_commit_persists_business_row_and_message(mq, make_queue):
    q = make_queue()
    _orders_table(mq)
    with mq.tx() as tx:
        tx.execute("INSERT INTO orders_table(id) VALUES (?)", (42,))
        seq = tx.send_one(q, OutMessage(body=b'{"order":42}'))
        more = tx.send(q, [OutMessage(body=b"a"), OutMessage(body=b"b")])
    assert seq > 0 and len(more) == 2
    assert _order_ids(mq) == [42]
    assert _bodies(mq, q) == sorted([b'{"order":42}', b"a", b"b"])


def test_13_4_exception_inside_tx_rolls_back_everything(mq, make_queue):
    q = make_queue()
    _orders_table(mq)
    with pytest.raises(Boom), mq.tx() as tx:
        tx.execute("INSERT INTO orders_table(id) VALUES (?)", (1,))
        tx.send_one(q, OutMessage(body=b"one"))
        tx.send(q, [OutMessage(body=b"two")])
        raise Boom
    assert _order_ids(mq) == []
    assert mq.stats(q).total == 0
    assert mq.receive(q, max_messages=10) == []
    # the database stays usable, for transactions and plain verbs alike
    with mq.tx() as tx:
        tx.execute("INSERT INTO orders_table(id) VALUES (?)", (2,))
        tx.send_one(q, OutMessage(body=b"after"))
    assert _order_ids(mq) == [2]
    (m,) = mq.receive(q)
    assert m.body == b"after"
    m.complete()


def test_13_4_failing_statement_inside_tx_rolls_back_earlier_sends(mq, make_queue):
    q = make_queue()
    _orders_table(mq)
    with mq.tx() as tx:
        tx.execute("INSERT INTO orders_table(id) VALUES (?)", (7,))
    with pytest.raises((sqlite3.IntegrityError, errors.MQLiteError)), mq.tx() as tx:
        tx.send_one(q, OutMessage(body=b"orphan"))
        tx.execute("INSERT INTO orders_table(id) VALUES (?)", (7,))  # duplicate key
    assert mq.stats(q).total == 0
    assert _order_ids(mq) == [7]


def test_13_4_refused_send_inside_tx_rolls_back_the_business_write(mq, make_queue):
    fifo = make_queue("fifo", ordering_mode="group_fifo")
    _orders_table(mq)
    with pytest.raises(errors.GroupRequired), mq.tx() as tx:
        tx.execute("INSERT INTO orders_table(id) VALUES (?)", (9,))
        tx.send_one(fifo, OutMessage(body=b"no group"))
    assert _order_ids(mq) == []
    assert mq.stats(fifo).total == 0


def test_13_1_refused_request_executes_nothing(mq, make_queue, clock):
    q = make_queue(ordering_mode="group_fifo", dedup_window_ms=60_000)
    with pytest.raises(errors.GroupRequired):
        mq.send(q, [OutMessage(body=b"a", group_id="g"), OutMessage(body=b"b")])
    with pytest.raises(errors.MessageTooLarge):
        mq.send(q, [OutMessage(body=b"c", group_id="g"), OutMessage(body=b"x" * (2 << 20))])
    with pytest.raises(errors.InvalidArgument):
        mq.schedule(q, [OutMessage(body=b"d", group_id="g")], at_ms=clock.now_ms())
    assert counts(mq, q) == (0, 0, 0, 0, 0, 0)
    # nothing was recorded for dedup either: the same ids/bodies are accepted as new
    assert mq.send(q, [OutMessage(body=b"a", group_id="g")])[0] > 0
    assert mq.stats(q).total == 1


def test_13_2_writer_queued_behind_an_abandoned_tx_commits_alone(mq, make_queue):
    q = make_queue()
    _orders_table(mq)
    other_result: list[object] = []

    def other_writer() -> None:
        try:
            other_result.append(mq.send_one(q, OutMessage(body=b"other")))
        except BaseException as exc:
            other_result.append(exc)

    worker = threading.Thread(target=other_writer)
    with pytest.raises(Boom), mq.tx() as tx:
        tx.execute("INSERT INTO orders_table(id) VALUES (?)", (1,))
        tx.send_one(q, OutMessage(body=b"mine"))
        worker.start()  # queues for the single writer while this tx is open
        raise Boom
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert len(other_result) == 1 and isinstance(other_result[0], int), other_result
    assert _bodies(mq, q) == [b"other"]
    assert _order_ids(mq) == []


def test_13_3_storm_of_failing_transactions_leaves_the_database_usable(mq, make_queue):
    q = make_queue(ordering_mode="group_fifo")
    _orders_table(mq)
    rng = random.Random(7)
    committed: list[int] = []
    for i in range(300):
        kind = rng.choice(["commit", "raise_early", "raise_late", "bad_sql", "dup_key", "refused"])
        try:
            with mq.tx() as tx:
                if kind == "raise_early":
                    raise Boom
                tx.execute("INSERT INTO orders_table(id) VALUES (?)", (1_000 + i,))
                if kind == "dup_key":
                    tx.execute("INSERT INTO orders_table(id) VALUES (?)", (1_000 + i,))
                if kind == "refused":
                    tx.send_one(q, OutMessage(body=b"%d" % i))  # no group: GroupRequired
                tx.send_one(q, OutMessage(body=b"%d" % i, group_id=f"g{i % 5}"))
                if kind == "bad_sql":
                    tx.execute("INSERT INTO no_such_table VALUES (1)")
                if kind == "raise_late":
                    raise Boom
        except (Boom, sqlite3.Error, errors.MQLiteError):
            continue
        committed.append(i)
    assert committed, "the storm should commit some transactions"
    assert _order_ids(mq) == [1_000 + i for i in committed]
    assert _bodies(mq, q) == sorted(b"%d" % i for i in committed)
    drained = 0
    while True:
        got = mq.receive(q, max_messages=256)
        if not got:
            break
        assert mq.complete_batch(q, [(m.seq_number, m.lock_token) for m in got])
        drained += len(got)
    assert drained == len(committed)
    assert mq.stats(q).total == 0


def test_13_3_storm_of_refused_settles_leaves_the_database_usable(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=1_000, max_delivery_count=1_000)
    send_bodies(mq, q, [b"%d" % i for i in range(50)])
    msgs = mq.receive(q, max_messages=50)
    clock.advance(1_000)  # every lease expired
    for m in msgs:
        for verb in ("complete", "abandon", "reject", "defer", "renew"):
            with pytest.raises(errors.LockLost):
                getattr(m, verb)()
    run_maintenance_once(mq)
    again = mq.receive(q, max_messages=50)
    assert len(again) == 50
    results = mq.complete_batch(q, [(m.seq_number, m.lock_token) for m in again])
    assert all(r.ok for r in results)
    assert mq.stats(q).total == 0


def test_13_3_concurrent_failing_transactions_leave_the_database_usable(mq, make_queue):
    q = make_queue()
    _orders_table(mq)
    committed: list[int] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def worker(w: int) -> None:
        try:
            for i in range(50):
                key = w * 1_000 + i
                try:
                    with mq.tx() as tx:
                        tx.execute("INSERT INTO orders_table(id) VALUES (?)", (key,))
                        tx.send_one(q, OutMessage(body=str(key).encode()))
                        if i % 3 == 0:
                            raise Boom
                except Boom:
                    continue
                with lock:
                    committed.append(key)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
    assert _order_ids(mq) == sorted(committed)
    assert _bodies(mq, q) == sorted(str(k).encode() for k in committed)

"""The transaction seam: savepoints, group commit and the catalog change only on COMMIT.

Each test sees the mechanism it names: a failing call that HAS written rows (a dedup queue
or a topic fan-out, never the executemany fast path that validates before writing), a
group-commit batch assembled deterministically by holding the writer while N callers
queue up, and an outer COMMIT that fails (SQLITE_FULL injected at the store's commit
seam).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mqlite import OutMessage, QueueConfig, errors
from mqlite.clock import FakeClock
from mqlite.engine import Engine
from waiting import one_batch

START_MS = 1_700_000_000_000


@pytest.fixture
def eng(tmp_path: Path) -> Iterator[Engine]:
    e = Engine(f"file:{tmp_path / 'seam.db'}", clock=FakeClock(START_MS))
    try:
        yield e
    finally:
        e.close()


def rows(eng: Engine, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with eng.tx() as tx:
        return list(tx.execute(sql, params).fetchall())


def message_count(eng: Engine, queue: str) -> int:
    return int(rows(eng, "SELECT count(*) FROM messages WHERE queue = ?", queue)[0][0])


def make_fanout_that_fails_late(eng: Engine) -> None:
    """Topic t -> a (standard, written first) and b (group_fifo): a message without a
    group_id is inserted into a, then refused by b."""
    eng.subscribe("t", "a")
    eng.subscribe("t", "b")
    eng.create_queue("b", QueueConfig(kind="subscription", ordering_mode="group_fifo"))


# -- the catalog changes on COMMIT, not when a block exits ------------------------------


def test_rolled_back_create_queue_leaves_no_ghost(eng: Engine) -> None:
    with pytest.raises(RuntimeError), eng.tx():
        eng.create_queue("ghost")
        eng.send_one("ghost", OutMessage(b"visible inside the transaction"))
        raise RuntimeError("roll back")
    with pytest.raises(errors.QueueNotFound):
        eng.get_queue("ghost")
    with pytest.raises(errors.QueueNotFound):  # not a raw sqlite3.IntegrityError
        eng.send_one("ghost", OutMessage(b"x"))
    assert "ghost" not in [q.name for q in eng.list_queues()]


def test_rolled_back_delete_queue_leaves_the_queue_live(eng: Engine) -> None:
    info = eng.create_queue("keep")
    with pytest.raises(RuntimeError), eng.tx():
        eng.delete_queue("keep", info.generation)
        with pytest.raises(errors.QueueNotFound):
            eng.get_queue("keep")  # the delete is visible inside its own transaction
        raise RuntimeError("roll back")
    assert eng.get_queue("keep").generation == info.generation
    assert eng.send_one("keep", OutMessage(b"x")) > 0


def test_rolled_back_subscribe_leaves_no_hidden_subscription(eng: Engine) -> None:
    with pytest.raises(RuntimeError), eng.tx():
        eng.subscribe("t", "s")
        raise RuntimeError("roll back")
    with pytest.raises(errors.QueueNotFound):
        eng.send_one("t", OutMessage(b"x"))  # t is no topic: nothing subscribed
    eng.create_queue("s")  # the name is free again
    assert eng.list_subscriptions() == []


def test_staged_catalog_is_invisible_to_other_threads_until_commit(eng: Engine) -> None:
    seen: list[object] = []
    with eng.tx():
        eng.create_queue("late")
        probe = threading.Thread(target=lambda: seen.append(eng.catalog.find("late")))
        probe.start()
        probe.join(5)
    assert seen == [None]
    assert eng.catalog.find("late") is not None


# -- savepoints: a failing verb inside tx() undoes only itself ---------------------------


def test_failing_fanout_inside_tx_leaves_nothing_of_itself(eng: Engine) -> None:
    make_fanout_that_fails_late(eng)
    with eng.tx() as tx:
        tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        tx.execute("INSERT INTO orders VALUES (1)")
        with pytest.raises(errors.GroupRequired):
            tx.send_one("t", OutMessage(b"no group"))
    assert rows(eng, "SELECT id FROM orders") == [(1,)]
    assert message_count(eng, "a") == 0  # the copy written before the failure is gone


def test_failing_dedup_batch_inside_tx_leaves_nothing_of_itself(eng: Engine) -> None:
    eng.create_queue("d", QueueConfig(ordering_mode="group_fifo", dedup_window_ms=60_000))
    with eng.tx() as tx:
        tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        tx.execute("INSERT INTO orders VALUES (1)")
        with pytest.raises(errors.GroupRequired):
            tx.send("d", [OutMessage(b"first", group_id="g", message_id="m1"), OutMessage(b"x")])
    assert rows(eng, "SELECT id FROM orders") == [(1,)]
    assert message_count(eng, "d") == 0
    assert rows(eng, "SELECT count(*) FROM dedup") == [(0,)]
    # m1 was never accepted: sending it again is a fresh enqueue, not a duplicate
    first = eng.send_one("d", OutMessage(b"first", group_id="g", message_id="m1"))
    assert eng.send_one("d", OutMessage(b"first", group_id="g", message_id="m1")) == first


# -- group commit ------------------------------------------------------------------------


class Batch:
    """Queue calls while the writer is held, so the writer thread runs them as ONE batch
    (``waiting.one_batch``: the writer's test signals say when every call is queued and
    how many the batch took)."""

    def __init__(self, eng: Engine) -> None:
        self.eng = eng
        self.results: dict[int, tuple[bool, Any]] = {}
        self._batch = one_batch(eng.writer)

    def __enter__(self) -> Batch:
        self.run = self._batch.__enter__()
        return self

    def add(self, fn: Callable[[], Any]) -> None:
        index = len(self.run.threads)

        def call() -> None:
            try:
                self.results[index] = (True, fn())
            except Exception as exc:
                self.results[index] = (False, exc)

        self.run.start(call)

    def __exit__(self, *exc: Any) -> None:
        self._batch.__exit__(*exc)

    @property
    def committed(self) -> list[int]:
        """The sizes of the batches the writer signalled committed."""
        return self.run.signals.batch_committed.values


def test_one_failing_call_in_a_batch_leaves_the_others_committed(eng: Engine) -> None:
    make_fanout_that_fails_late(eng)
    eng.create_queue("q")
    with Batch(eng) as batch:
        for i in range(3):
            batch.add(lambda i=i: eng.send_one("q", OutMessage(f"ok {i}".encode())))
        batch.add(lambda: eng.send_one("t", OutMessage(b"fails after writing a")))
        for i in range(3, 6):
            batch.add(lambda i=i: eng.send_one("q", OutMessage(f"ok {i}".encode())))
    failed = {i: v for i, (ok, v) in batch.results.items() if not ok}
    assert list(failed) == [3]
    assert isinstance(failed[3], errors.GroupRequired)
    seqs = sorted(v for ok, v in batch.results.values() if ok)
    assert len(seqs) == 6
    assert sorted(m.seq_number for m in eng.peek("q", max=100)) == seqs
    assert message_count(eng, "a") == 0  # the failing call's savepoint was rolled back
    assert batch.committed == [7]  # one commit for the seven calls, the failed one included


def test_a_failed_outer_commit_fails_every_call_and_changes_nothing(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng.create_queue("q")
    eng.send_one("q", OutMessage(b"held"))
    (held,) = eng.receive("q")
    woken: list[str] = []
    eng.notifier.register("q", lambda: woken.append("q"))

    def disk_full(conn: sqlite3.Connection) -> None:
        err = sqlite3.OperationalError("database or disk is full")
        err.sqlite_errorcode = 13  # type: ignore[attr-defined]
        raise err

    with Batch(eng) as batch:
        monkeypatch.setattr(eng.store, "_commit", disk_full)
        batch.add(lambda: eng.create_queue("new"))
        batch.add(lambda: eng.send_one("q", OutMessage(b"lost")))
        batch.add(lambda: eng.complete("q", held.seq_number, held.lock_token))
        batch.add(lambda: eng.subscribe("t", "s"))
    monkeypatch.undo()

    assert len(batch.results) == 4
    assert batch.committed == []  # the writer signalled no commit
    for ok, value in batch.results.values():
        assert not ok
        assert isinstance(value, errors.StorageFull)  # 503 unavailable: retryable
        assert value.category == "full"
    assert woken == []  # no wake-up for a send that never committed
    with pytest.raises(errors.QueueNotFound):
        eng.get_queue("new")
    with pytest.raises(errors.QueueNotFound):
        eng.send_one("t", OutMessage(b"x"))
    assert rows(eng, "SELECT count(*) FROM settlement_receipts") == [(0,)]
    assert [m.seq_number for m in eng.peek("q")] == [held.seq_number]  # still locked
    assert eng.peek("q")[0].state == "locked"
    eng.complete("q", held.seq_number, held.lock_token)  # the lease is intact


def test_no_sqlite3_exception_escapes_a_verb(eng: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    eng.create_queue("q")

    def broken(conn: sqlite3.Connection) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(eng.store, "_commit", broken)
    with pytest.raises(errors.StorageError) as raised:
        eng.send_one("q", OutMessage(b"x"))
    assert not isinstance(raised.value, sqlite3.Error)
    assert "sqlite" not in raised.value.message.lower()


def test_embedded_threads_share_commits(eng: Engine) -> None:
    """Threaded embedded callers that find the writer busy are batched: fewer commits
    than calls (the writer thread's group commit serves them too)."""
    eng.create_queue("q")
    commits = 0
    real = eng.store._commit

    def counting(conn: sqlite3.Connection) -> None:
        nonlocal commits
        commits += 1
        real(conn)

    eng.store._commit = counting  # type: ignore[method-assign]
    with Batch(eng) as batch:
        for i in range(16):
            batch.add(lambda i=i: eng.send_one("q", OutMessage(str(i).encode())))
    assert all(ok for ok, _ in batch.results.values())
    assert commits == 1
    assert batch.committed == [16]
    assert eng.stats("q").active == 16

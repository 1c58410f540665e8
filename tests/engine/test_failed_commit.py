"""A COMMIT that fails publishes nothing of its transaction in memory: no staged catalog
edit survives it (issue 27 item 6: the second catcher, besides the root-only tmpfs test of
test_disk_full.py, and unlike test_transaction_seam.py it fails the COMMIT *statement*, so
the store's own commit path runs: ``Store._commit`` and ``_Transaction.__exit__``).

The store's connection is wrapped so that its next COMMIT fails as a full disk makes it
fail (SQLITE_FULL, the transaction left open for the store's rollback, as SQLite leaves
it); everything else is the real connection on a real file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mqlite import OutMessage, errors
from mqlite.clock import FakeClock
from mqlite.engine import Engine


class FailingCommit:
    """The real connection, but the next ``failures`` COMMITs fail with SQLITE_FULL."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.failures = 0
        self.commits_refused = 0

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if self.failures and sql.lstrip().upper().startswith("COMMIT"):
            self.failures -= 1
            self.commits_refused += 1
            err = sqlite3.OperationalError("database or disk is full")
            err.sqlite_errorcode = 13  # type: ignore[attr-defined]
            raise err
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@pytest.fixture
def eng(tmp_path: Path) -> Iterator[Engine]:
    e = Engine(f"file:{tmp_path / 'commit.db'}", clock=FakeClock(1_700_000_000_000))
    yield e
    e.close()


@pytest.fixture
def failing(eng: Engine) -> Iterator[FailingCommit]:
    real = eng.store.conn
    wrapper = FailingCommit(real)
    eng.store.conn = wrapper  # type: ignore[assignment]
    yield wrapper
    eng.store.conn = real


def names(eng: Engine) -> set[str]:
    return {q.name for q in eng.list_queues()}


def test_a_queue_whose_commit_failed_does_not_exist(eng: Engine, failing: FailingCommit) -> None:
    failing.failures = 1
    with pytest.raises(errors.StorageFull):
        eng.create_queue("ghost")
    assert failing.commits_refused == 1
    assert "ghost" not in names(eng)
    with pytest.raises(errors.QueueNotFound):
        eng.get_queue("ghost")
    with pytest.raises(errors.QueueNotFound):
        eng.send_one("ghost", OutMessage(b"x"))
    eng.create_queue("next")  # the next COMMIT publishes its own edit, nothing older
    assert names(eng) == {"next"}
    eng.create_queue("ghost")  # the name is free: nothing half-made blocks it
    assert eng.send_one("ghost", OutMessage(b"x")) > 0


def test_a_subscription_whose_commit_failed_routes_nothing(
    eng: Engine, failing: FailingCommit
) -> None:
    failing.failures = 1
    with pytest.raises(errors.StorageFull):
        eng.subscribe("t", "s")
    assert not {"t", "s"} & names(eng)
    with pytest.raises(errors.QueueNotFound):
        eng.send_one("t", OutMessage(b"x"))
    eng.create_queue("next")
    assert names(eng) == {"next"}
    with pytest.raises(errors.QueueNotFound):
        eng.send_one("t", OutMessage(b"x"))


def test_a_delete_whose_commit_failed_keeps_the_queue(eng: Engine, failing: FailingCommit) -> None:
    eng.create_queue("kept")
    failing.failures = 1
    with pytest.raises(errors.StorageFull):
        eng.delete_queue("kept")
    assert "kept" in names(eng)
    assert eng.send_one("kept", OutMessage(b"still here")) > 0


def test_a_transaction_whose_commit_failed_publishes_none_of_its_edits(
    eng: Engine, failing: FailingCommit
) -> None:
    """Several staged edits in one transaction (one ``tx()``): all of them are dropped."""
    eng.create_queue("old")
    failing.failures = 1
    with pytest.raises(errors.StorageFull), eng.tx() as tx:
        eng.create_queue("a")
        eng.create_queue("b")
        eng.delete_queue("old")
        tx.send_one("a", OutMessage(b"x"))
    assert names(eng) == {"old"}
    assert [m.body for m in eng.peek("old")] == []
    eng.create_queue("next")
    assert names(eng) == {"old", "next"}


# -- effect counters count what committed, and only that ----------------------------------


def effects(eng: Engine) -> dict[tuple[str, str], int]:
    return {(m.queue, m.event): m.count for m in eng.observe().messages if m.count}


def test_effects_of_a_transaction_whose_commit_failed_are_not_counted(
    eng: Engine, failing: FailingCommit
) -> None:
    eng.create_queue("q")
    eng.send_one("q", OutMessage(b"held"))
    (held,) = eng.receive("q")
    before = effects(eng)
    failing.failures = 2
    with pytest.raises(errors.StorageFull):
        eng.send("q", [OutMessage(b"x"), OutMessage(b"y")])
    with pytest.raises(errors.StorageFull):
        eng.complete("q", held.seq_number, held.lock_token)
    assert effects(eng) == before
    eng.complete("q", held.seq_number, held.lock_token)
    eng.send_one("q", OutMessage(b"z"))
    after = effects(eng)
    assert after[("q", "completed")] == before.get(("q", "completed"), 0) + 1
    assert after[("q", "enqueued")] == before[("q", "enqueued")] + 1


def test_effects_wait_for_the_commit_and_a_rolled_back_block_counts_nothing(
    eng: Engine,
) -> None:
    eng.create_queue("q")
    seen_inside: list[dict[tuple[str, str], int]] = []
    with pytest.raises(RuntimeError), eng.tx() as tx:
        tx.send_one("q", OutMessage(b"rolled back"))
        raise RuntimeError("the caller's block failed")
    assert effects(eng) == {}
    with eng.tx() as tx:
        tx.send_one("q", OutMessage(b"kept"))
        seen_inside.append(effects(eng))  # not committed yet: not counted yet
        with pytest.raises(RuntimeError), eng.tx() as inner:  # a savepoint
            inner.send_one("q", OutMessage(b"dropped with its savepoint"))
            raise RuntimeError("the inner block failed")
    assert seen_inside == [{}]
    assert effects(eng) == {("q", "enqueued"): 1}
    assert [m.body for m in eng.peek("q")] == [b"kept"]

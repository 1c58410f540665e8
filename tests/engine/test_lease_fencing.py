"""Lease fencing without a server (issue 27 item 6: the second catcher, besides the
real-sqld tests of test_remote_lease.py). ``Lease`` speaks plain SQL, so two brokers are
two ``Lease`` objects on two connections to one local SQLite file, on one FakeClock.

The promises: a live lease of another holder refuses a take; a broker whose lease lapsed
and was taken over finds out in the first write transaction after its local expiry,
before that transaction writes anything, and is fenced for good (every later write is
refused before a statement is sent); a renewal is valid only once its transaction commits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mqlite import errors
from mqlite.clock import FakeClock
from mqlite.engine.lease import Lease

TTL_MS = 30_000


class Counting:
    """A connection that records every statement sent (fencing means: none)."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("CREATE TABLE IF NOT EXISTS work(v TEXT)")
        self.sent: list[str] = []

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.sent.append(sql.split()[0].upper())
        return self.conn.execute(sql, *args)

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def brokers(tmp_path: Path, clock: FakeClock) -> Iterator[Callable[[str], tuple[Lease, Counting]]]:
    opened: list[Counting] = []

    def broker(holder: str) -> tuple[Lease, Counting]:
        conn = Counting(tmp_path / "shared.db")
        opened.append(conn)
        return Lease("db", clock.now_ms, holder=holder, ttl_ms=TTL_MS), conn

    yield broker
    for c in opened:
        c.conn.close()


def write(lease: Lease, conn: Counting, value: str) -> None:
    """One write transaction as the store runs it: begin (fenced), write, commit, then
    the after-commit hooks."""
    hooks: list[Callable[[], None]] = []
    lease.begin(conn, hooks.append)  # type: ignore[arg-type]
    try:
        conn.execute("INSERT INTO work(v) VALUES (?)", (value,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    for hook in hooks:
        hook()


def rows(conn: Counting) -> list[str]:
    return [r[0] for r in conn.conn.execute("SELECT v FROM work ORDER BY rowid")]


def test_a_live_lease_of_another_holder_refuses_the_take(brokers: Any) -> None:
    a, a_conn = brokers("broker-a")
    b, b_conn = brokers("broker-b")
    a.take(a_conn)
    with pytest.raises(errors.DBLocked, match="broker-a"):
        b.take(b_conn)


def test_a_broker_whose_lease_was_taken_over_is_fenced_before_it_writes(
    brokers: Any, clock: FakeClock
) -> None:
    a, a_conn = brokers("broker-a")
    b, b_conn = brokers("broker-b")
    a.take(a_conn)
    write(a, a_conn, "a1")
    clock.advance(TTL_MS + 1)  # a stalled: its lease lapsed, b takes the database over
    b.take(b_conn)
    write(b, b_conn, "b1")
    with pytest.raises(errors.DBLocked, match="lost its lease"):
        write(a, a_conn, "a2")  # the first write after a's local expiry finds out
    assert rows(b_conn) == ["a1", "b1"]  # a2 was never written
    sent = len(a_conn.sent)
    for _ in range(3):
        with pytest.raises(errors.DBLocked):
            write(a, a_conn, "a3")
    assert len(a_conn.sent) == sent, "a fenced broker sent statements"
    assert rows(b_conn) == ["a1", "b1"]
    write(b, b_conn, "b2")  # the new holder is unaffected


def test_a_renewal_counts_only_once_its_transaction_commits(brokers: Any, clock: FakeClock) -> None:
    a, a_conn = brokers("broker-a")
    a.take(a_conn)
    first = a.valid_until
    clock.advance(TTL_MS)  # due: the next transaction renews first, inside itself
    hooks: list[Callable[[], None]] = []
    a.begin(a_conn, hooks.append)  # type: ignore[arg-type]
    a_conn.execute("ROLLBACK")  # the transaction (and its renewal) did not commit
    assert a.valid_until == first and hooks  # the new expiry waits for the commit
    write(a, a_conn, "renewed")
    assert a.valid_until == clock.now_ms() + TTL_MS

"""Fresh-database helpers for the engine tests that drive SQL directly (maintenance, DLQ,
peek): build the schema, insert rows, read them back, and check query plans."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mqlite.engine import rows

SCHEMA = (Path(rows.__file__).with_name("schema.sql")).read_text()


def open_db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=OFF")  # tests need no durability, only speed
    conn.executescript(SCHEMA)
    return conn


@contextmanager
def tx(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def add_queue(conn: sqlite3.Connection, name: str, **cols: Any) -> None:
    cols = {"name": name, "created_at": 0, "updated_at": 0, **cols}
    names = ", ".join(cols)
    marks = ", ".join(f":{k}" for k in cols)
    conn.execute(f"INSERT INTO queues ({names}) VALUES ({marks})", cols)


def add_msg(conn: sqlite3.Connection, queue: str, **cols: Any) -> int:
    cols = {"queue": queue, "enqueued_at": 0, "body": b"", **cols}
    names = ", ".join(cols)
    marks = ", ".join(f":{k}" for k in cols)
    cur = conn.execute(f"INSERT INTO messages ({names}) VALUES ({marks})", cols)
    assert cur.lastrowid is not None
    return cur.lastrowid


def msg(conn: sqlite3.Connection, seq: int) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM messages WHERE id = ?", (seq,)).fetchone()
    return None if row is None else dict(row)


def state_of(conn: sqlite3.Connection, seq: int) -> str | None:
    row = msg(conn, seq)
    return None if row is None else str(row["state"])


def ids(conn: sqlite3.Connection, where: str = "1", *args: Any) -> list[int]:
    sql = f"SELECT id FROM messages WHERE {where} ORDER BY id"
    return [r[0] for r in conn.execute(sql, args)]


def plan(conn: sqlite3.Connection, sql: str) -> list[str]:
    """EXPLAIN QUERY PLAN details, binding 1 to every named parameter."""
    params = {name: 1 for name in re.findall(r"(?<![:\w]):(\w+)", sql)}
    return [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


def seed_for_planner(conn: sqlite3.Connection, analyze: bool) -> None:
    """Give the planner realistic statistics (or none, like a fresh production DB)."""
    if not analyze:
        return
    states = ["active", "locked", "deferred", "scheduled", "dead_lettered"]
    with tx(conn):
        add_queue(conn, "pa")
        add_queue(conn, "pb")
        conn.executemany(
            "INSERT INTO messages (queue, state, enqueued_at, body, expires_at, locked_until,"
            " visible_at) VALUES (?, ?, ?, x'00', ?, ?, ?)",
            [(("pa", "pb")[i % 2], states[i % 5], i, (i % 3) * i, i, i) for i in range(3000)],
        )
        conn.executemany(  # enough rows that a seek beats a scan, as in production
            "INSERT INTO dedup VALUES (?, ?, NULL, 1, ?)",
            [(("pa", "pb")[i % 2], f"m{i}", i) for i in range(3000)],
        )
        conn.execute("ANALYZE")


def assert_plan(lines: list[str], indexes: Collection[str], scans: Collection[str] = ()) -> None:
    text = "\n".join(lines)
    for index in indexes:
        assert index in text, f"expected {index} in plan:\n{text}"
    for line in lines:
        if line.startswith("SCAN ") and not line.startswith(("SCAN (subquery", "SCAN CONSTANT")):
            table = line.split()[1]
            assert table in scans, f"unexpected scan {line!r} in plan:\n{text}"

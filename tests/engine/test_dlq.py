"""Redrive and Purge (original-behaviour §6, §13.15): chunk selection, in-place vs
cross-queue field rules, purge scoping, and the pinned query plan of every statement."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mqlite.engine import dlq, rows
from mqlite.errors import InvalidArgument, QueueNotFound

NOW = 1_000_000

# --- fresh-database helpers (duplicated per engine test file: no shared conftest) -------
SCHEMA = (Path(rows.__file__).with_name("schema.sql")).read_text()


def open_db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=OFF")  # tests need no durability, only speed
    conn.executescript(SCHEMA)
    return conn


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    db = open_db(tmp_path / "mq.db")
    yield db
    db.close()


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
        conn.execute("INSERT INTO dedup VALUES ('pa', 'm', NULL, 1, 1)")
        conn.execute("ANALYZE")


def assert_plan(lines: list[str], indexes: Collection[str], scans: Collection[str] = ()) -> None:
    text = "\n".join(lines)
    for index in indexes:
        assert index in text, f"expected {index} in plan:\n{text}"
    for line in lines:
        if line.startswith("SCAN ") and not line.startswith(("SCAN (subquery", "SCAN CONSTANT")):
            table = line.split()[1]
            assert table in scans, f"unexpected scan {line!r} in plan:\n{text}"


def add_dead(conn: sqlite3.Connection, queue: str, enqueued_at: int = 0, **cols: Any) -> int:
    return add_msg(conn, queue, state="dead_lettered", enqueued_at=enqueued_at, **cols)


def dead(conn: sqlite3.Connection, queue: str) -> list[int]:
    return ids(conn, "queue = ? AND state = 'dead_lettered'", queue)


def do_redrive(conn: sqlite3.Connection, queue: str, **kw: Any) -> tuple[int, int]:
    kw = {"target": None, "max": 0, "older_than_ms": 0, **kw}
    with tx(conn):
        return dlq.redrive(conn, NOW, queue, **kw)


def do_purge(conn: sqlite3.Connection, queue: str, **kw: Any) -> int:
    kw = {"max": 0, "older_than_ms": 0, **kw}
    with tx(conn):
        return dlq.purge(conn, NOW, queue, **kw)


FULL = {
    "enqueued_at": 500,
    "expires_at": 900,
    "visible_at": 700,
    "delivery_count": 10,
    "message_id": "mid",
    "correlation_id": "cid",
    "reply_to": "rt",
    "group_id": "g",
    "content_type": "application/json",
    "subject": "s",
    "properties": '{"k":"v"}',
    "body": b"payload",
    "dead_letter_reason": "MaxDeliveryCountExceeded",
    "dead_letter_description": "too many",
}
METADATA = (
    "message_id", "correlation_id", "reply_to", "group_id", "content_type", "subject",
    "properties", "body",
)  # fmt: skip


# --- redrive -------------------------------------------------------------------------


@pytest.mark.parametrize("target", [None, "", "q"])
def test_redrive_in_place_resets_delivery_and_keeps_enqueue_and_expiry(
    conn: sqlite3.Connection, target: str | None
) -> None:
    add_queue(conn, "q")
    seq = add_msg(conn, "q", state="dead_lettered", **FULL)
    assert do_redrive(conn, "q", target=target) == (1, seq)
    row = msg(conn, seq)
    assert row is not None
    assert row["state"] == "active"
    assert row["delivery_count"] == 0
    assert (row["lock_token"], row["locked_until"], row["visible_at"]) == (None, 0, 0)
    assert (row["dead_letter_reason"], row["dead_letter_description"]) == (None, None)
    assert (row["enqueued_at"], row["expires_at"]) == (500, 900)
    assert {k: row[k] for k in METADATA} == {k: FULL[k] for k in METADATA}


def test_redrive_cross_queue_copies_with_new_seq_fresh_enqueue_and_no_ttl(
    conn: sqlite3.Connection,
) -> None:
    add_queue(conn, "src")
    add_queue(conn, "dst")
    first = add_msg(conn, "src", state="dead_lettered", **FULL)
    second = add_msg(conn, "src", state="dead_lettered", **{**FULL, "message_id": "mid2"})
    assert do_redrive(conn, "src", target="dst") == (2, second)
    assert msg(conn, first) is None and msg(conn, second) is None
    copies = [msg(conn, s) for s in ids(conn, "queue = 'dst'")]
    assert [c["message_id"] for c in copies if c] == ["mid", "mid2"]  # source order kept
    for row in copies:
        assert row is not None
        assert row["id"] > second
        assert row["state"] == "active"
        assert (row["delivery_count"], row["visible_at"], row["locked_until"]) == (0, 0, 0)
        assert (row["enqueued_at"], row["expires_at"]) == (NOW, 0)
        assert row["lock_token"] is None
        assert (row["dead_letter_reason"], row["dead_letter_description"]) == (None, None)
        assert {k: row[k] for k in METADATA if k != "message_id"} == {
            k: FULL[k] for k in METADATA if k != "message_id"
        }


def test_redrive_max_takes_oldest_by_seq_and_reports_last(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seqs = [add_dead(conn, "q") for _ in range(5)]
    assert do_redrive(conn, "q", max=2) == (2, seqs[1])
    assert dead(conn, "q") == seqs[2:]
    assert ids(conn, "state = 'active'") == seqs[:2]


def test_redrive_chunks_until_the_dlq_is_empty(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "t")
    seqs = [add_dead(conn, "q") for _ in range(5)]
    chunks = []
    while (chunk := do_redrive(conn, "q", target="t", max=2)) != (0, 0):
        chunks.append(chunk)
    assert chunks == [(2, seqs[1]), (2, seqs[3]), (1, seqs[4])]
    assert len(ids(conn, "queue = 't' AND state = 'active'")) == 5


def test_redrive_older_than_filters_on_original_enqueue(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    old = add_dead(conn, "q", enqueued_at=NOW - 101)
    edge = add_dead(conn, "q", enqueued_at=NOW - 100)
    young = add_dead(conn, "q", enqueued_at=NOW)
    old2 = add_dead(conn, "q", enqueued_at=0)
    assert do_redrive(conn, "q", older_than_ms=100) == (2, old2)
    assert ids(conn, "state = 'active'") == [old, old2]
    assert dead(conn, "q") == [edge, young]


def test_redrive_max_and_older_than_combine(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "t")
    young = add_dead(conn, "q", enqueued_at=NOW)
    olds = [add_dead(conn, "q", enqueued_at=0) for _ in range(3)]
    assert do_redrive(conn, "q", target="t", max=2, older_than_ms=10) == (2, olds[1])
    assert dead(conn, "q") == [young, olds[2]]


def test_redrive_only_moves_that_queues_dead_letters(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "other")
    add_queue(conn, "t")
    mine = add_dead(conn, "q")
    theirs = add_dead(conn, "other")
    live = {s: add_msg(conn, "q", state=s) for s in ("active", "locked", "deferred", "scheduled")}
    assert do_redrive(conn, "q", target="t") == (1, mine)
    assert dead(conn, "other") == [theirs]
    assert {s: state_of(conn, seq) for s, seq in live.items()} == {s: s for s in live}


def test_redrive_empty_dlq_moves_nothing(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "t")
    add_msg(conn, "q", state="active")
    assert do_redrive(conn, "q") == (0, 0)
    assert do_redrive(conn, "q", target="t") == (0, 0)


@pytest.mark.parametrize(("max_", "older"), [(-1, 0), (0, -1)])
def test_redrive_negative_bounds_are_invalid(
    conn: sqlite3.Connection, max_: int, older: int
) -> None:
    add_queue(conn, "q")
    add_dead(conn, "q")
    with pytest.raises(InvalidArgument):
        do_redrive(conn, "q", max=max_, older_than_ms=older)
    assert len(dead(conn, "q")) == 1


def test_redrive_to_missing_target_is_queue_not_found(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seq = add_dead(conn, "q")
    with pytest.raises(QueueNotFound):
        do_redrive(conn, "q", target="nope")
    assert dead(conn, "q") == [seq]


# --- purge ---------------------------------------------------------------------------


def test_purge_with_no_bounds_deletes_the_whole_dlq(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    for _ in range(4):
        add_dead(conn, "q")
    assert do_purge(conn, "q") == 4
    assert dead(conn, "q") == []


def test_purge_max_deletes_oldest_by_seq(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seqs = [add_dead(conn, "q") for _ in range(5)]
    assert do_purge(conn, "q", max=3) == 3
    assert dead(conn, "q") == seqs[3:]


def test_purge_older_than_filters_on_enqueue(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_dead(conn, "q", enqueued_at=NOW - 11)
    edge = add_dead(conn, "q", enqueued_at=NOW - 10)
    young = add_dead(conn, "q", enqueued_at=NOW)
    assert do_purge(conn, "q", older_than_ms=10) == 1
    assert dead(conn, "q") == [edge, young]


def test_purge_max_and_older_than_combine(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    young = add_dead(conn, "q", enqueued_at=NOW)
    olds = [add_dead(conn, "q", enqueued_at=0) for _ in range(3)]
    assert do_purge(conn, "q", max=2, older_than_ms=1) == 2
    assert dead(conn, "q") == [young, olds[2]]


def test_purge_is_scoped_to_the_queue_and_the_dlq(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "other")
    add_dead(conn, "q")
    theirs = add_dead(conn, "other")
    live = [add_msg(conn, "q", state=s) for s in ("active", "locked", "deferred", "scheduled")]
    assert do_purge(conn, "q") == 1
    assert ids(conn) == sorted([theirs, *live])


def test_purge_of_unknown_or_empty_queue_deletes_nothing(conn: sqlite3.Connection) -> None:
    assert do_purge(conn, "ghost") == 0


@pytest.mark.parametrize(("max_", "older"), [(-1, 0), (0, -1)])
def test_purge_negative_bounds_are_invalid(conn: sqlite3.Connection, max_: int, older: int) -> None:
    add_queue(conn, "q")
    add_dead(conn, "q")
    with pytest.raises(InvalidArgument):
        do_purge(conn, "q", max=max_, older_than_ms=older)
    assert len(dead(conn, "q")) == 1


# --- query plans ---------------------------------------------------------------------

PLANS: dict[str, set[str]] = {
    "DLQ_CHUNK_SQL": {"idx_msg_dlq"},
    "REDRIVE_IN_PLACE_SQL": {"idx_msg_dlq"},
    "REDRIVE_COPY_SQL": {"idx_msg_dlq"},
    "DLQ_DELETE_CHUNK_SQL": {"idx_msg_dlq"},
    "QUEUE_EXISTS_SQL": {"sqlite_autoindex_queues_1"},
}


def test_every_sql_constant_has_a_pinned_plan() -> None:
    assert {name for name in dir(dlq) if name.endswith("_SQL")} == set(PLANS)


@pytest.mark.parametrize("analyze", [False, True], ids=["fresh", "analyzed"])
@pytest.mark.parametrize("name", sorted(PLANS))
def test_dlq_statement_plans_on_its_index(
    conn: sqlite3.Connection, name: str, analyze: bool
) -> None:
    seed_for_planner(conn, analyze)
    lines = plan(conn, getattr(dlq, name))
    assert_plan(lines, PLANS[name])
    if name != "QUEUE_EXISTS_SQL":  # the chunk is a range of idx_msg_dlq (queue, id)
        assert any("idx_msg_dlq (queue=?" in line for line in lines), lines

"""Query plans are behaviour (docs/architecture.md, "Staying fast"): the hot paths seek
their partial index and never scan ``messages``. A plan regression here is the O(n^2)
drain coming back."""

from __future__ import annotations

import sqlite3

import pytest

from mqlite.engine import claim, dedup, queues, send, settle, settle_batch, store


@pytest.fixture(scope="module")
def conn() -> sqlite3.Connection:
    """A schema with a seeded, ANALYZEd mixed backlog so the planner sees realistic stats."""
    c = sqlite3.connect(":memory:")
    for stmt in store.schema_statements():
        c.execute(stmt)
    for i in range(5):
        c.execute(
            "INSERT INTO queues(name, ordering_mode, created_at, updated_at) VALUES (?, ?, 0, 0)",
            (f"q{i}", "group_fifo"),
        )
    states = ["active", "locked", "deferred", "scheduled", "dead_lettered", "active", "active"]
    rows = [(f"q{i % 5}", states[i % len(states)], f"g{i % 16}", b"x" * 16, 0) for i in range(3000)]
    c.executemany(
        "INSERT INTO messages(queue, state, group_id, body, enqueued_at) VALUES (?, ?, ?, ?, ?)",
        rows,
    )
    c.execute("ANALYZE")
    return c


def plan(conn: sqlite3.Connection, sql: str, params: object) -> str:
    rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    return "\n".join(r[3] for r in rows)


def assert_no_table_scan(text: str) -> None:
    for line in text.splitlines():
        if line.startswith("SCAN"):
            # Only constant lists (VALUES of a batch) may be scanned.
            assert "CONSTANT ROW" in line or line.strip() == "SCAN pairs", text


CLAIM = {"queue": "q1", "now": 5, "until": 10, "token": "t"}


def test_1_5_grouped_claim_seeks_idx_msg_active_and_probes_by_index(
    conn: sqlite3.Connection,
) -> None:
    text = plan(conn, claim.CLAIM_GROUPED_SQL, CLAIM)
    assert "idx_msg_active" in text
    assert text.count("idx_msg_group_inflight (queue=? AND group_id=? AND state=? AND id<?)") == 3
    assert_no_table_scan(text)


def test_1_5_strict_claim_bounds_by_the_earliest_blocker_per_state(
    conn: sqlite3.Connection,
) -> None:
    text = plan(conn, claim.CLAIM_STRICT_SQL, CLAIM)
    assert "idx_msg_active (queue=? AND id<?)" in text
    for index in ("idx_msg_deferred", "idx_msg_sched_head", "idx_msg_locked_head"):
        assert index in text
    assert_no_table_scan(text)


@pytest.mark.parametrize(
    "sql",
    [
        settle.COMPLETE_SQL,
        settle.ABANDON_SQL,
        settle.REJECT_SQL,
        settle.DEFER_SQL,
        settle.RENEW_SQL,
    ],
)
def test_settlement_verbs_are_primary_key_lookups(conn: sqlite3.Connection, sql: str) -> None:
    params = {
        "seq": 1,
        "queue": "q1",
        "token": "t",
        "now": 1,
        "max": 3,
        "delay": 0,
        "reason": "r",
        "description": None,
        "error": None,
        "lock": 10,
    }
    text = plan(conn, sql, params)
    assert "USING INTEGER PRIMARY KEY (rowid=?)" in text
    assert_no_table_scan(text)


def test_the_retry_policy_count_probe_is_a_primary_key_lookup(conn: sqlite3.Connection) -> None:
    text = plan(conn, settle.LOCKED_COUNT_SQL, (1, "q1", "t"))
    assert "USING INTEGER PRIMARY KEY (rowid=?)" in text
    assert_no_table_scan(text)


def test_renew_batch_looks_up_its_pairs_not_every_live_lock(conn: sqlite3.Connection) -> None:
    text = plan(conn, settle.renew_batch_sql(3), [1, "a", 2, "b", 3, "c", 1, 2, "q1", 1])
    assert "USING INTEGER PRIMARY KEY (rowid=?)" in text
    assert "idx_msg_locked" not in text
    assert_no_table_scan(text)


def test_complete_batch_deletes_its_pairs_by_key_not_every_live_lock(
    conn: sqlite3.Connection,
) -> None:
    """The batch's one DELETE (settle_batch.py), padding pairs (NULL) included."""
    params = [1, 2, None, None, 1, "a", 2, "b", None, None, None, None, "q1", 1]
    text = plan(conn, settle_batch.delete_pairs_sql(4), params)
    assert "USING INTEGER PRIMARY KEY (rowid=?)" in text
    assert "idx_msg_locked" not in text
    assert_no_table_scan(text)


@pytest.mark.parametrize(
    ("sql", "params", "index"),
    [
        (settle.COMPLETE_PAIR_SQL, [1, "q1", "t", 1], "INTEGER PRIMARY KEY"),
        (
            settle.LOOKUP_RECEIPT_SQL,
            ["q1", 1, "t", "completed", "", 1],
            "sqlite_autoindex_settlement_receipts_1",
        ),
        (
            settle.RECEIVE_DEFERRED_SQL,
            {"token": "t", "until": 1, "seq": 1, "queue": "q1"},
            "INTEGER PRIMARY KEY",
        ),
        (dedup.LOOKUP_DEDUP_SQL, ["q1", "m", 1], "sqlite_autoindex_dedup_1"),
        (send.CANCEL_SQL, [1, "q1"], "INTEGER PRIMARY KEY"),
        (claim.LOOKUP_ATTEMPT_SQL, ["q1", "a", 1], "sqlite_autoindex_receive_attempts_1"),
        (queues.HAS_MESSAGES_SQL, ["q1"], "idx_msg_dlq"),
    ],
)
def test_lookup_statements_use_their_keys(
    conn: sqlite3.Connection, sql: str, params: object, index: str
) -> None:
    text = plan(conn, sql, params)
    assert index in text
    assert_no_table_scan(text)


def test_queue_emptiness_probe_touches_every_state_index(conn: sqlite3.Connection) -> None:
    text = plan(conn, queues.HAS_MESSAGES_SQL, ["q1"])
    for index in (
        "idx_msg_active",
        "idx_msg_locked_head",
        "idx_msg_deferred",
        "idx_msg_sched_head",
        "idx_msg_dlq",
    ):
        assert index in text

"""Maintenance passes (original-behaviour §3, §4, §13.3/§13.17): transitions, boundaries,
retention bounds, free-page reclaim, and the pinned query plan of every statement."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_sqldb import (
    SCHEMA,
    add_msg,
    add_queue,
    assert_plan,
    ids,
    msg,
    plan,
    seed_for_planner,
    state_of,
    tx,
)

from mqlite.engine import maintenance as mt
from mqlite.engine.maintenance import DLQBounds

NOW = 1_000_000


# --- reaper --------------------------------------------------------------------------


def test_reaper_boundary_equal_deadline_is_expired(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seq = add_msg(conn, "q", state="locked", lock_token="t", locked_until=NOW, delivery_count=1)
    with tx(conn):
        woken = mt.reap_locks(conn, NOW)
    row = msg(conn, seq)
    assert row is not None
    assert (row["state"], row["lock_token"], row["locked_until"]) == ("active", None, 0)
    assert row["delivery_count"] == 1
    assert woken == Counter({"q": 1})


def test_reaper_live_lock_is_untouched(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seq = add_msg(conn, "q", state="locked", lock_token="t", locked_until=NOW + 1)
    with tx(conn):
        assert mt.reap_locks(conn, NOW) == Counter()
    row = msg(conn, seq)
    assert row is not None
    assert (row["state"], row["lock_token"], row["locked_until"]) == ("locked", "t", NOW + 1)


def test_reaper_dead_letters_at_max_delivery_count(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q", max_delivery_count=3)
    below = add_msg(conn, "q", state="locked", lock_token="a", locked_until=1, delivery_count=2)
    at = add_msg(conn, "q", state="locked", lock_token="b", locked_until=1, delivery_count=3)
    over = add_msg(conn, "q", state="locked", lock_token="c", locked_until=1, delivery_count=7)
    with tx(conn):
        mt.reap_locks(conn, NOW)
    row = msg(conn, below)
    assert row is not None
    assert (row["state"], row["dead_letter_reason"]) == ("active", None)
    for seq in (at, over):
        row = msg(conn, seq)
        assert row is not None
        assert row["state"] == "dead_lettered"
        assert row["dead_letter_reason"] == "MaxDeliveryCountExceeded"
        assert (row["lock_token"], row["locked_until"]) == (None, 0)


def test_reaper_uses_each_queues_own_max_delivery_count(conn: sqlite3.Connection) -> None:
    add_queue(conn, "strict", max_delivery_count=1)
    add_queue(conn, "lenient", max_delivery_count=5)
    a = add_msg(conn, "strict", state="locked", lock_token="a", locked_until=1, delivery_count=1)
    b = add_msg(conn, "lenient", state="locked", lock_token="b", locked_until=1, delivery_count=1)
    with tx(conn):
        woken = mt.reap_locks(conn, NOW)
    assert woken == Counter({"strict": 1, "lenient": 1})  # a dead-lettered head unblocks too
    assert [state_of(conn, s) for s in (a, b)] == ["dead_lettered", "active"]


def test_reaper_wakes_only_queues_with_expired_locks(conn: sqlite3.Connection) -> None:
    for name in ("expired", "live", "idle"):
        add_queue(conn, name)
    add_msg(conn, "expired", state="locked", lock_token="a", locked_until=NOW - 5)
    add_msg(conn, "expired", state="locked", lock_token="b", locked_until=NOW - 1)
    add_msg(conn, "live", state="locked", lock_token="c", locked_until=NOW + 5)
    add_msg(conn, "idle", state="active", locked_until=NOW - 5)
    with tx(conn):
        assert mt.reap_locks(conn, NOW) == Counter({"expired": 2})  # as many wakes as rows


def test_reaper_never_touches_other_states(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q", max_delivery_count=1)
    seqs = {
        s: add_msg(conn, "q", state=s, locked_until=1, delivery_count=5)
        for s in ("active", "deferred", "scheduled", "dead_lettered")
    }
    with tx(conn):
        assert mt.reap_locks(conn, NOW) == Counter()
    assert {s: state_of(conn, seq) for s, seq in seqs.items()} == {s: s for s in seqs}


# --- crash recovery ------------------------------------------------------------------


def test_recovery_releases_every_lock_live_or_expired(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q", max_delivery_count=10)
    live = add_msg(
        conn, "q", state="locked", lock_token="a", locked_until=NOW * 2, delivery_count=1
    )
    gone = add_msg(conn, "q", state="locked", lock_token="b", locked_until=1, delivery_count=1)
    other = add_msg(conn, "q", state="deferred")
    with tx(conn):
        assert mt.recover_locks(conn) == 2
    for seq in (live, gone):
        row = msg(conn, seq)
        assert row is not None
        assert (row["state"], row["lock_token"], row["locked_until"]) == ("active", None, 0)
    assert ids(conn, "state = 'locked'") == []
    assert state_of(conn, other) == "deferred"


def test_recovery_respects_max_delivery_count(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q", max_delivery_count=2)
    at = add_msg(conn, "q", state="locked", lock_token="a", locked_until=NOW * 2, delivery_count=2)
    below = add_msg(
        conn, "q", state="locked", lock_token="b", locked_until=NOW * 2, delivery_count=1
    )
    with tx(conn):
        mt.recover_locks(conn)
    row = msg(conn, at)
    assert row is not None
    assert (row["state"], row["dead_letter_reason"]) == (
        "dead_lettered",
        "MaxDeliveryCountExceeded",
    )
    assert state_of(conn, below) == "active"


# --- scheduler -----------------------------------------------------------------------


def test_scheduler_boundary_visible_at_equal_now_activates(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    due = add_msg(conn, "q", state="scheduled", visible_at=NOW)
    early = add_msg(conn, "q", state="scheduled", visible_at=NOW - 10)
    later = add_msg(conn, "q", state="scheduled", visible_at=NOW + 1)
    with tx(conn):
        woken = mt.activate_scheduled(conn, NOW)
    assert woken == Counter({"q": 2})  # due and early: two claimable, two wakes
    assert [state_of(conn, s) for s in (due, early, later)] == ["active", "active", "scheduled"]


def test_scheduler_keeps_visible_at_and_wakes_only_due_queues(conn: sqlite3.Connection) -> None:
    add_queue(conn, "due")
    add_queue(conn, "future")
    seq = add_msg(conn, "due", state="scheduled", visible_at=NOW - 3, delivery_count=2)
    add_msg(conn, "future", state="scheduled", visible_at=NOW + 3)
    with tx(conn):
        assert mt.activate_scheduled(conn, NOW) == Counter({"due": 1})
    row = msg(conn, seq)
    assert row is not None
    assert (row["visible_at"], row["delivery_count"]) == (NOW - 3, 2)


# --- TTL -----------------------------------------------------------------------------

LIVE_STATES = ("active", "locked", "deferred", "scheduled")


@pytest.mark.parametrize("state", LIVE_STATES)
def test_ttl_dead_letters_every_live_state_when_queue_dead_letters_on_expire(
    conn: sqlite3.Connection, state: str
) -> None:
    add_queue(conn, "q", dead_letter_on_expire=1)
    token = "t" if state == "locked" else None
    seq = add_msg(
        conn, "q", state=state, expires_at=NOW - 1, lock_token=token, locked_until=NOW * 2
    )
    with tx(conn):
        assert mt.expire_ttl_counts(conn, NOW) == (1, 0)
    row = msg(conn, seq)
    assert row is not None
    assert (row["state"], row["dead_letter_reason"]) == ("dead_lettered", "TTLExpired")
    assert (row["lock_token"], row["locked_until"]) == (None, 0)
    assert row["expires_at"] == NOW - 1


@pytest.mark.parametrize("state", LIVE_STATES)
def test_ttl_discards_every_live_state_when_queue_drops_on_expire(
    conn: sqlite3.Connection, state: str
) -> None:
    add_queue(conn, "q", dead_letter_on_expire=0)
    seq = add_msg(conn, "q", state=state, expires_at=NOW - 1)
    with tx(conn):
        assert mt.expire_ttl_counts(conn, NOW) == (0, 1)
    assert msg(conn, seq) is None


@pytest.mark.parametrize("dead_letter_on_expire", [0, 1])
def test_ttl_boundary_expires_at_equal_now_expires(
    conn: sqlite3.Connection, dead_letter_on_expire: int
) -> None:
    add_queue(conn, "q", dead_letter_on_expire=dead_letter_on_expire)
    at = add_msg(conn, "q", expires_at=NOW)
    after = add_msg(conn, "q", expires_at=NOW + 1)
    with tx(conn):
        assert mt.expire_ttl(conn, NOW) == 1
    assert ids(conn, "state = 'active'") == [after]
    assert ids(conn, "state = 'dead_lettered'") == ([at] if dead_letter_on_expire else [])


def test_ttl_zero_means_no_expiry(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q", dead_letter_on_expire=0)
    seq = add_msg(conn, "q", expires_at=0)
    with tx(conn):
        assert mt.expire_ttl(conn, NOW) == 0
    assert msg(conn, seq) is not None


@pytest.mark.parametrize("dead_letter_on_expire", [0, 1])
def test_ttl_never_touches_dead_letters(
    conn: sqlite3.Connection, dead_letter_on_expire: int
) -> None:
    add_queue(conn, "q", dead_letter_on_expire=dead_letter_on_expire)
    seq = add_msg(
        conn, "q", state="dead_lettered", expires_at=NOW - 1, dead_letter_reason="Rejected"
    )
    with tx(conn):
        assert mt.expire_ttl(conn, NOW) == 0
    row = msg(conn, seq)
    assert row is not None
    assert (row["state"], row["dead_letter_reason"]) == ("dead_lettered", "Rejected")


def test_ttl_mode_is_per_queue(conn: sqlite3.Connection) -> None:
    add_queue(conn, "keep", dead_letter_on_expire=1)
    add_queue(conn, "drop", dead_letter_on_expire=0)
    kept = add_msg(conn, "keep", expires_at=NOW - 1)
    add_msg(conn, "drop", expires_at=NOW - 1)
    with tx(conn):
        assert mt.expire_ttl_counts(conn, NOW) == (1, 1)
    assert ids(conn) == [kept]


# --- janitors ------------------------------------------------------------------------


def add_dedup(conn: sqlite3.Connection, queue: str, message_id: str, seen_at: int) -> None:
    conn.execute(
        "INSERT INTO dedup (queue, message_id, request_hash, seq_number, seen_at)"
        " VALUES (?, ?, 'h', 1, ?)",
        (queue, message_id, seen_at),
    )


def dedup_ids(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT message_id FROM dedup")}


def test_dedup_prune_is_per_queue_by_its_own_window(conn: sqlite3.Connection) -> None:
    add_queue(conn, "narrow", dedup_window_ms=100)
    add_queue(conn, "wide", dedup_window_ms=1000)
    add_dedup(conn, "narrow", "inside", NOW - 99)
    add_dedup(conn, "narrow", "at-edge", NOW - 100)  # lookups ask seen_at > now - window
    add_dedup(conn, "narrow", "older", NOW - 500)  # inside the wide queue's window: still out
    add_dedup(conn, "wide", "kept", NOW - 500)
    add_dedup(conn, "wide", "old", NOW - 1001)
    with tx(conn):
        assert mt.prune_dedup(conn, NOW) == 3
    assert dedup_ids(conn) == {"inside", "kept"}


def test_a_1s_window_queue_is_pruned_beside_a_10_year_window_queue(
    conn: sqlite3.Connection,
) -> None:
    # A 10-year window is above today's maximum: a database from before the bound.
    add_queue(conn, "decade", dedup_window_ms=10 * 365 * 24 * 3600 * 1000)
    add_queue(conn, "second", dedup_window_ms=1000)
    add_dedup(conn, "decade", "idle", 0)
    conn.executemany(
        "INSERT INTO dedup (queue, message_id, request_hash, seq_number, seen_at)"
        " VALUES ('second', ?, 'h', 1, ?)",
        [(f"m{i}", NOW - 2000 - i) for i in range(10_000)],
    )
    with tx(conn):
        assert mt.prune_dedup(conn, NOW) == 10_000
    assert dedup_ids(conn) == {"idle"}


def test_dedup_rows_of_a_queue_with_dedup_off_are_pruned(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")  # window 0: its rows (from when it was on) are never looked up
    add_dedup(conn, "q", "ancient", 0)
    with tx(conn):
        assert mt.prune_dedup(conn, NOW) == 1
    assert dedup_ids(conn) == set()


def test_receipt_prune_deletes_strictly_expired(conn: sqlite3.Connection) -> None:
    for token, expires_at in (("gone", NOW - 1), ("edge", NOW), ("live", NOW + 1)):
        conn.execute(
            "INSERT INTO settlement_receipts VALUES (?, 'q', 1, 'complete', '', 0, ?)",
            (token, expires_at),
        )
    with tx(conn):
        assert mt.prune_receipts(conn, NOW) == 1
    left = {r[0] for r in conn.execute("SELECT lock_token FROM settlement_receipts")}
    assert left == {"edge", "live"}


def test_attempt_prune_deletes_strictly_expired(conn: sqlite3.Connection) -> None:
    for attempt, expires_at in (("gone", NOW - 1), ("edge", NOW), ("live", NOW + 1)):
        conn.execute(
            "INSERT INTO receive_attempts VALUES ('q', ?, '[]', 0, ?)", (attempt, expires_at)
        )
    with tx(conn):
        assert mt.prune_attempts(conn, NOW) == 1
    left = {r[0] for r in conn.execute("SELECT attempt_id FROM receive_attempts")}
    assert left == {"edge", "live"}


# --- free-page reclaim ---------------------------------------------------------------


@pytest.fixture
def wal_conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(tmp_path / "wal.db", isolation_level=None)
    db.execute("PRAGMA auto_vacuum=INCREMENTAL")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA foreign_keys=ON")
    db.executescript(SCHEMA)
    add_queue(db, "q")
    with tx(db):
        for _ in range(100):
            add_msg(db, "q", body=b"x" * 8192)
    with tx(db):
        db.execute("DELETE FROM messages")
    yield db
    db.close()


def freelist(conn: sqlite3.Connection) -> int:
    count: int = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return count


def test_reclaim_frees_every_free_page_past_threshold(wal_conn: sqlite3.Connection) -> None:
    before = freelist(wal_conn)
    assert before > 100
    assert mt.reclaim_free_pages(wal_conn, threshold_pages=before) == before
    assert freelist(wal_conn) == 0


def test_reclaim_below_threshold_does_nothing(wal_conn: sqlite3.Connection) -> None:
    before = freelist(wal_conn)
    assert mt.reclaim_free_pages(wal_conn, threshold_pages=before + 1) == 0
    assert freelist(wal_conn) == before


def test_reclaim_force_ignores_threshold(wal_conn: sqlite3.Connection) -> None:
    before = freelist(wal_conn)
    assert mt.reclaim_free_pages(wal_conn, force=True, threshold_pages=10**9) == before


def test_reclaim_refuses_to_run_inside_a_transaction(wal_conn: sqlite3.Connection) -> None:
    wal_conn.execute("BEGIN")
    with pytest.raises(RuntimeError):
        mt.reclaim_free_pages(wal_conn, force=True)
    wal_conn.execute("ROLLBACK")


# --- DLQ retention -------------------------------------------------------------------


def add_dead(conn: sqlite3.Connection, queue: str, enqueued_at: int = 0, size: int = 0) -> int:
    return add_msg(conn, queue, state="dead_lettered", enqueued_at=enqueued_at, body=b"b" * size)


def dlq(conn: sqlite3.Connection, queue: str) -> list[int]:
    return ids(conn, "queue = ? AND state = 'dead_lettered'", queue)


NO_BOUNDS = DLQBounds()


def retain(conn: sqlite3.Connection, bounds: DLQBounds = NO_BOUNDS, **kw: int) -> int:
    with tx(conn):
        return mt.enforce_dlq_retention(conn, NOW, bounds, **kw)


@pytest.mark.parametrize(
    ("per_queue", "engine_default", "effective"),
    [(0, 0, 0), (0, 50, 50), (7, 50, 7), (7, 0, 7), (-1, 50, 0), (-5, 0, 0), (0, -1, 0)],
)
def test_effective_bound_zero_inherits_positive_overrides_negative_unbounded(
    per_queue: int, engine_default: int, effective: int
) -> None:
    assert mt.effective_bound(per_queue, engine_default) == effective


def test_retention_disabled_by_default_deletes_nothing(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seqs = [add_dead(conn, "q", enqueued_at=0, size=1000) for _ in range(20)]
    assert retain(conn) == 0
    assert dlq(conn, "q") == seqs


def test_retention_age_drops_dead_letters_older_than_bound(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    old = add_dead(conn, "q", enqueued_at=NOW - 101)
    edge = add_dead(conn, "q", enqueued_at=NOW - 100)  # exactly max age: kept
    young = add_dead(conn, "q", enqueued_at=NOW - 1)
    assert retain(conn, DLQBounds(max_age_ms=100)) == 1
    assert old not in dlq(conn, "q")
    assert dlq(conn, "q") == [edge, young]


def test_retention_age_finds_old_rows_behind_young_ones_across_batches(
    conn: sqlite3.Connection,
) -> None:
    add_queue(conn, "q")
    young = [add_dead(conn, "q", enqueued_at=NOW) for _ in range(3)]
    old = [add_dead(conn, "q", enqueued_at=0) for _ in range(5)]
    young.append(add_dead(conn, "q", enqueued_at=NOW))
    assert old  # ids interleave: young, then old, then young
    assert retain(conn, DLQBounds(max_age_ms=10), batch=2, max_batches=10) == 5
    assert dlq(conn, "q") == young


def test_retention_count_keeps_newest(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seqs = [add_dead(conn, "q") for _ in range(7)]
    assert retain(conn, DLQBounds(max_count=3)) == 4
    assert dlq(conn, "q") == seqs[-3:]


def test_retention_count_under_cap_deletes_nothing(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seqs = [add_dead(conn, "q") for _ in range(3)]
    assert retain(conn, DLQBounds(max_count=3)) == 0
    assert dlq(conn, "q") == seqs


def test_retention_bytes_drops_oldest_past_cumulative_cap(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seqs = [add_dead(conn, "q", size=size) for size in (40, 30, 20, 10)]
    # newest->oldest sums: 10, 30, 60, 100 -> the 30-byte row reaches 60 > 50: it and older go
    assert retain(conn, DLQBounds(max_bytes=50)) == 2
    assert dlq(conn, "q") == seqs[2:]


def test_retention_bytes_exactly_at_cap_keeps_all(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seqs = [add_dead(conn, "q", size=size) for size in (25, 25)]
    assert retain(conn, DLQBounds(max_bytes=50)) == 0
    assert dlq(conn, "q") == seqs


def test_retention_applies_age_then_count_then_bytes(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    old = add_dead(conn, "q", enqueued_at=0, size=1)
    rest = [add_dead(conn, "q", enqueued_at=NOW, size=10) for _ in range(5)]
    bounds = DLQBounds(max_age_ms=100, max_count=4, max_bytes=25)
    # age drops `old`; count keeps the 4 newest (drops rest[0]); bytes keeps 2 (20 <= 25)
    assert retain(conn, bounds) == 4
    assert old not in dlq(conn, "q")
    assert dlq(conn, "q") == rest[-2:]


def test_retention_per_queue_override_beats_engine_default(conn: sqlite3.Connection) -> None:
    add_queue(conn, "tight", dlq_max_count=1)
    add_queue(conn, "loose", dlq_max_count=4)
    tight = [add_dead(conn, "tight") for _ in range(5)]
    loose = [add_dead(conn, "loose") for _ in range(5)]
    assert retain(conn, DLQBounds(max_count=2)) == 4 + 1
    assert dlq(conn, "tight") == tight[-1:]
    assert dlq(conn, "loose") == loose[-4:]


def test_retention_per_queue_zero_inherits_and_negative_opts_out(conn: sqlite3.Connection) -> None:
    add_queue(conn, "inherit", dlq_max_count=0, dlq_max_age_ms=0, dlq_max_bytes=0)
    add_queue(conn, "optout", dlq_max_count=-1, dlq_max_age_ms=-1, dlq_max_bytes=-1)
    inherit = [add_dead(conn, "inherit", size=10) for _ in range(4)]
    optout = [add_dead(conn, "optout", size=10) for _ in range(4)]
    assert retain(conn, DLQBounds(max_age_ms=1, max_count=2, max_bytes=5)) == 4
    assert dlq(conn, "inherit") == []
    assert dlq(conn, "optout") == optout
    assert inherit


def test_retention_per_queue_age_without_engine_default(conn: sqlite3.Connection) -> None:
    add_queue(conn, "aged", dlq_max_age_ms=50)
    add_queue(conn, "plain")
    add_dead(conn, "aged", enqueued_at=NOW - 51)
    plain = add_dead(conn, "plain", enqueued_at=0)
    assert retain(conn) == 1
    assert dlq(conn, "aged") == []
    assert dlq(conn, "plain") == [plain]


def test_retention_never_touches_rows_outside_the_dlq(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q", dlq_max_count=1, dlq_max_age_ms=1, dlq_max_bytes=1)
    live = [
        add_msg(conn, "q", state=s, enqueued_at=0, body=b"x" * 100)
        for s in ("active", "locked", "deferred", "scheduled")
    ]
    add_dead(conn, "q", enqueued_at=0, size=100)
    assert retain(conn) == 1
    assert ids(conn) == live


def test_retention_is_bounded_per_dimension_per_queue_per_pass(conn: sqlite3.Connection) -> None:
    add_queue(conn, "a")
    add_queue(conn, "b")
    a = [add_dead(conn, "a") for _ in range(10)]
    b = [add_dead(conn, "b") for _ in range(10)]
    assert retain(conn, DLQBounds(max_count=1), batch=2, max_batches=2) == 8
    assert dlq(conn, "a") == a[4:]
    assert dlq(conn, "b") == b[4:]
    assert retain(conn, DLQBounds(max_count=1), batch=2, max_batches=2) == 8
    assert retain(conn, DLQBounds(max_count=1), batch=2, max_batches=2) == 2
    assert dlq(conn, "a") == a[-1:]
    assert dlq(conn, "b") == b[-1:]


# --- query plans ---------------------------------------------------------------------

AUTO_QUEUES = "sqlite_autoindex_queues_1"
PLANS: dict[str, tuple[set[str], set[str]]] = {
    # constant: (indexes the plan must use, tables it may SCAN)
    "REAP_LOCKS_SQL": ({"idx_msg_locked", AUTO_QUEUES}, set()),
    "RECOVER_LOCKS_SQL": ({"idx_msg_locked", AUTO_QUEUES}, set()),
    # The retry policy's lock parking: one queue's expired leases, then each by its id.
    "EXPIRED_LOCKS_OF_SQL": ({"idx_msg_locked"}, set()),
    "PARK_EXPIRED_SQL": ({"INTEGER PRIMARY KEY"}, set()),
    "ACTIVATE_SCHEDULED_SQL": ({"idx_msg_scheduled"}, set()),
    "EXPIRE_TTL_DEAD_LETTER_SQL": ({"idx_msg_expire", AUTO_QUEUES}, set()),
    "EXPIRE_TTL_DISCARD_SQL": ({"idx_msg_expire", AUTO_QUEUES}, set()),
    # Driven by the small queues table, one (queue, seen_at) range seek per queue.
    "PRUNE_DEDUP_SQL": (
        {"idx_dedup_queue_seen (queue=? AND seen_at<?)", "dedup USING INTEGER PRIMARY KEY"},
        {"q"},  # q = the queues table (a row per queue)
    ),
    "PRUNE_RECEIPTS_SQL": ({"idx_settlement_expire"}, set()),
    "PRUNE_ATTEMPTS_SQL": ({"idx_recv_attempt_expire"}, set()),
    "FREELIST_COUNT_SQL": (set(), set()),
    "PAGE_SIZE_SQL": (set(), set()),
    "WAL_CHECKPOINT_TRUNCATE_SQL": (set(), set()),
    "INCREMENTAL_VACUUM_SQL": (set(), set()),
    "DLQ_QUEUES_SQL": ({"idx_msg_dlq", AUTO_QUEUES}, {"dq"}),  # dq = the recursive CTE
    "DLQ_DELETE_AGED_SQL": ({"idx_msg_dlq", "INTEGER PRIMARY KEY"}, set()),
    "DLQ_COUNT_CUTOFF_SQL": ({"idx_msg_dlq"}, set()),
    "DLQ_BYTES_CUTOFF_SQL": ({"idx_msg_dlq"}, set()),
    "DLQ_DELETE_THROUGH_SQL": ({"idx_msg_dlq", "INTEGER PRIMARY KEY"}, set()),
}


def test_every_sql_constant_has_a_pinned_plan() -> None:
    assert {name for name in dir(mt) if name.endswith("_SQL")} == set(PLANS)


@pytest.mark.parametrize("analyze", [False, True], ids=["fresh", "analyzed"])
@pytest.mark.parametrize("name", sorted(PLANS))
def test_maintenance_statement_plans_on_its_index(
    conn: sqlite3.Connection, name: str, analyze: bool
) -> None:
    seed_for_planner(conn, analyze)
    indexes, scans = PLANS[name]
    lines = plan(conn, getattr(mt, name))
    assert_plan(lines, indexes, scans)
    assert not any(line.startswith("SCAN messages") for line in lines)

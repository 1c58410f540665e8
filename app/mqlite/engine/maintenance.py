"""Background maintenance passes (original-behaviour §3, §4): pure functions of ``now_ms``.

Each pass runs on the caller's connection inside the caller's transaction (except
``reclaim_free_pages``) and never reads a clock. Every statement seeks a partial index;
``tests/engine/test_maintenance.py`` pins the plans.
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from mqlite.defaults import DLQ_DELETE_BATCH, DLQ_MAX_BATCHES, RECLAIM_FREELIST_PAGES
from mqlite.engine import retry
from mqlite.engine.settle import redeliver_sql
from mqlite.types import QueueConfig

LOCK_EXPIRED = "lock expired"
"""The last error a message gets when its lease lapsed (no consumer said why)."""

# The queue's delivery limit, a primary-key probe per row.
_QUEUE_MAX = "(SELECT q.max_delivery_count FROM queues q WHERE q.name = messages.queue)"


def _release_locks_sql(where: str, recorded: str = "") -> str:
    """One template for every release of leases in bulk: a row at its queue's delivery
    limit is dead-lettered, any other goes back to active; ``recorded`` adds SET clauses
    (the reaper records why)."""
    return f"""
UPDATE messages SET
    state = CASE WHEN delivery_count >= {_QUEUE_MAX} THEN 'dead_lettered' ELSE 'active' END,
    dead_letter_reason = CASE WHEN delivery_count >= {_QUEUE_MAX}
                              THEN 'MaxDeliveryCountExceeded' ELSE dead_letter_reason END,{recorded}
    lock_token = NULL,
    locked_until = 0
WHERE {where}
RETURNING queue, state
"""


# Reaper: one UPDATE over all queues; RETURNING gives the queues to wake without a
# second probe. Seeks idx_msg_locked (state, locked_until); the queue's retry bound is a
# primary-key probe. ``locked_until == now`` is expired (§13.3). Counts were already
# incremented at claim, so ``>=`` means the max-th delivery was the last. The failure is
# recorded as the message's last error ('lock expired', at the lease deadline), and a
# dead letter's description carries it. Queues with a retry policy were parked first
# (PARK_EXPIRED_SQL), so none of their rows is left for this statement.
REAP_LOCKS_SQL = _release_locks_sql(
    "state = 'locked' AND locked_until <= :now",
    recorded=f"""
    dead_letter_description = CASE WHEN delivery_count >= {_QUEUE_MAX}
                                   THEN '{LOCK_EXPIRED}' ELSE dead_letter_description END,
    last_error = '{LOCK_EXPIRED}',
    last_error_at = locked_until,""",
)

# A queue with a retry policy: its expired leases, then one guarded UPDATE each parking
# the row in `scheduled` until ``locked_until + delay`` (engine/retry.py), exactly like an
# Abandon(delay_ms) -- it holds its group on ordered queues -- or active if that moment
# has passed, or dead-lettered at the delivery limit. Seeks idx_msg_locked (state,
# locked_until) with the queue as a filter; each UPDATE is a primary-key probe.
EXPIRED_LOCKS_OF_SQL = """
SELECT id, delivery_count, locked_until FROM messages
WHERE queue = :queue AND state = 'locked' AND locked_until <= :now
"""

PARK_EXPIRED_SQL = (
    redeliver_sql(
        delayed=":visible > :now",
        visible=":visible",
        error=f"'{LOCK_EXPIRED}'",
        dead_description=f"'{LOCK_EXPIRED}'",
        error_at="locked_until",
        where="id = :id AND state = 'locked' AND locked_until <= :now",
    )
    + "RETURNING queue, state\n"
)

# Crash recovery at open: no lease survives a restart, live or expired (§3.1, §13.1), so
# every locked row is released (a crash never buys an extra delivery). idx_msg_locked.
RECOVER_LOCKS_SQL = _release_locks_sql("state = 'locked'")

# Scheduler: due scheduled rows become active; visible_at is kept (the TTL anchor and
# what Peek shows). Seeks idx_msg_scheduled (state, visible_at); RETURNING = queues to wake.
ACTIVATE_SCHEDULED_SQL = """
UPDATE messages SET state = 'active'
WHERE state = 'scheduled' AND visible_at <= :now
RETURNING queue
"""

# TTL sweep. The state list is a filter on idx_msg_expire's range, not the access path
# (an IN over states cannot match the per-state partial indexes). The queue's
# dead_letter_on_expire is a primary-key probe, never a scan of queues. Dead-lettered rows
# are never re-expired; the lock of an expiring locked row is void.
EXPIRE_TTL_DEAD_LETTER_SQL = """
UPDATE messages SET
    state = 'dead_lettered',
    dead_letter_reason = 'TTLExpired',
    lock_token = NULL,
    locked_until = 0
WHERE expires_at > 0 AND expires_at <= :now
  AND state IN ('active', 'locked', 'deferred', 'scheduled')
  AND (SELECT q.dead_letter_on_expire FROM queues q WHERE q.name = messages.queue) <> 0
RETURNING queue
"""

EXPIRE_TTL_DISCARD_SQL = """
DELETE FROM messages
WHERE expires_at > 0 AND expires_at <= :now
  AND state IN ('active', 'locked', 'deferred', 'scheduled')
  AND (SELECT q.dead_letter_on_expire FROM queues q WHERE q.name = messages.queue) = 0
RETURNING queue
"""

# Each queue's dedup rows are pruned by ITS OWN window (rows at or past it are never
# looked at again: lookups ask for seen_at > now - window). Driven from the small queues
# table, one range seek on idx_dedup_queue_seen (queue, seen_at < horizon) per queue: a
# pass costs what it deletes plus a seek per queue, whatever another queue's window is.
PRUNE_DEDUP_SQL = """
DELETE FROM dedup WHERE rowid IN (
    SELECT d.rowid FROM queues AS q CROSS JOIN dedup AS d
     WHERE d.queue = q.name AND d.seen_at <= :now - q.dedup_window_ms
)
"""

# Range deletes on the expires_at indexes (idx_settlement_expire, idx_recv_attempt_expire):
# a janitor pass costs what it deletes, not the table size.
PRUNE_RECEIPTS_SQL = "DELETE FROM settlement_receipts WHERE expires_at < :now"
PRUNE_ATTEMPTS_SQL = "DELETE FROM receive_attempts WHERE expires_at < :now"

# Free-page reclaim (§3 reclaimFreePages): checkpoint so freed pages are in the main file,
# incremental_vacuum, then truncate the WAL again. incremental_vacuum frees ONE page per
# step and its rows have no columns, so sqlite3's execute() steps it once (one page);
# executescript() steps every statement to completion, hence it runs the vacuum.
FREELIST_COUNT_SQL = "PRAGMA freelist_count"
PAGE_SIZE_SQL = "PRAGMA page_size"
WAL_CHECKPOINT_TRUNCATE_SQL = "PRAGMA wal_checkpoint(TRUNCATE)"
INCREMENTAL_VACUUM_SQL = "PRAGMA incremental_vacuum"

# Queues that hold dead letters, by a loose index scan of idx_msg_dlq (one seek per such
# queue: neither messages nor queues is scanned), joined to their bounds by primary key.
DLQ_QUEUES_SQL = """
WITH RECURSIVE dq(name) AS (
    SELECT (SELECT MIN(queue) FROM messages WHERE state = 'dead_lettered')
    UNION ALL
    SELECT (SELECT MIN(m.queue) FROM messages m
            WHERE m.state = 'dead_lettered' AND m.queue > dq.name)
    FROM dq WHERE dq.name IS NOT NULL
)
SELECT q.name, q.dlq_max_age_ms, q.dlq_max_count, q.dlq_max_bytes
FROM dq JOIN queues q ON q.name = dq.name
"""

# Age retention: oldest id first within idx_msg_dlq (queue, id). enqueued_at is not
# indexed, so the ``id > :after`` watermark keeps the pass linear: surviving (young) rows
# before the last deleted id are never re-read by the next batch.
DLQ_DELETE_AGED_SQL = """
DELETE FROM messages WHERE id IN (
    SELECT id FROM messages
    WHERE queue = :queue AND state = 'dead_lettered' AND id > :after AND enqueued_at < :cutoff
    ORDER BY id LIMIT :batch
)
RETURNING id
"""

# Count retention: the (max_count+1)-th newest DLQ id; it and everything older go. No
# row is the normal under-cap case. Walks idx_msg_dlq backwards.
DLQ_COUNT_CUTOFF_SQL = """
SELECT id FROM messages WHERE queue = :queue AND state = 'dead_lettered'
ORDER BY id DESC LIMIT 1 OFFSET :keep
"""

# Byte retention: newest-to-oldest running sum of body lengths; the first row where the
# sum exceeds the cap, and everything older, goes.
DLQ_BYTES_CUTOFF_SQL = """
SELECT id FROM (
    SELECT id, SUM(length(body) + external_body_bytes)
                   OVER (ORDER BY id DESC ROWS UNBOUNDED PRECEDING) AS kept
    FROM messages WHERE queue = :queue AND state = 'dead_lettered'
) WHERE kept > :max_bytes LIMIT 1
"""

# One bounded batch of "this id and everything older" (count and byte retention), oldest
# first, within idx_msg_dlq so only dead letters are ever touched.
DLQ_DELETE_THROUGH_SQL = """
DELETE FROM messages WHERE id IN (
    SELECT id FROM messages
    WHERE queue = :queue AND state = 'dead_lettered' AND id <= :cutoff
    ORDER BY id LIMIT :batch
)
"""


def free_page_bytes(conn: sqlite3.Connection) -> int:
    """Bytes of the database file's free pages (reused before the file grows)."""
    pages = int(conn.execute(FREELIST_COUNT_SQL).fetchone()[0])
    return pages * int(conn.execute(PAGE_SIZE_SQL).fetchone()[0])


def _released(rows: list[tuple[str, str]]) -> tuple[Counter[str], Counter[str]]:
    """(every released lease per queue, those that went to the DLQ per queue)."""
    released = Counter(queue for queue, _ in rows)
    dead = Counter(queue for queue, state in rows if state == "dead_lettered")
    return released, dead


def reap_locks_by_queue(
    conn: sqlite3.Connection,
    now_ms: int,
    policies: Mapping[str, QueueConfig] | None = None,
    draw: retry.Draw = random.random,
) -> tuple[Counter[str], Counter[str]]:
    """Release expired locks: (released per queue, dead-lettered at the limit per queue).

    ``policies`` (queue -> config, only queues with a retry policy) park theirs for the
    policy's delay instead; without any, this is the one statement it always was."""
    rows: list[tuple[str, str]] = []
    for name, config in (policies or {}).items():
        rows += _park_expired(conn, now_ms, name, config, draw)
    rows += conn.execute(REAP_LOCKS_SQL, {"now": now_ms}).fetchall()
    return _released(rows)


def _park_expired(
    conn: sqlite3.Connection, now_ms: int, queue: str, config: QueueConfig, draw: retry.Draw
) -> list[tuple[str, str]]:
    expired = conn.execute(EXPIRED_LOCKS_OF_SQL, {"queue": queue, "now": now_ms}).fetchall()
    out: list[tuple[str, str]] = []
    for seq, count, locked_until in expired:
        params = {
            "id": seq,
            "now": now_ms,
            "max": config.max_delivery_count,
            "visible": int(locked_until) + retry.delay_ms(config, int(count), draw),
        }
        out += conn.execute(PARK_EXPIRED_SQL, params).fetchall()
    return out


def reap_locks(
    conn: sqlite3.Connection, now_ms: int, policies: Mapping[str, QueueConfig] | None = None
) -> Counter[str]:
    """Release expired locks; return how many per queue (that many waiters are woken)."""
    return reap_locks_by_queue(conn, now_ms, policies)[0]


def recover_locks_by_queue(conn: sqlite3.Connection) -> tuple[Counter[str], Counter[str]]:
    """Release every locked row (crash recovery at open): (per queue, dead-lettered)."""
    return _released(conn.execute(RECOVER_LOCKS_SQL).fetchall())


def recover_locks(conn: sqlite3.Connection) -> int:
    """Release every locked row (crash recovery at open); return how many."""
    return sum(recover_locks_by_queue(conn)[0].values())


def activate_scheduled(conn: sqlite3.Connection, now_ms: int) -> Counter[str]:
    """Activate due scheduled rows; return how many per queue (that many waiters wake)."""
    return Counter(row[0] for row in conn.execute(ACTIVATE_SCHEDULED_SQL, {"now": now_ms}))


def expire_ttl_by_queue(conn: sqlite3.Connection, now_ms: int) -> tuple[Counter[str], Counter[str]]:
    """Expire TTL-lapsed rows: ``(dead_lettered, discarded)`` per queue."""
    params = {"now": now_ms}
    dead = Counter(r[0] for r in conn.execute(EXPIRE_TTL_DEAD_LETTER_SQL, params).fetchall())
    discarded = Counter(r[0] for r in conn.execute(EXPIRE_TTL_DISCARD_SQL, params).fetchall())
    return dead, discarded


def expire_ttl_counts(conn: sqlite3.Connection, now_ms: int) -> tuple[int, int]:
    """Expire TTL-lapsed rows; return ``(dead_lettered, discarded)``."""
    dead, discarded = expire_ttl_by_queue(conn, now_ms)
    return sum(dead.values()), sum(discarded.values())


def expire_ttl(conn: sqlite3.Connection, now_ms: int) -> int:
    """Expire TTL-lapsed rows (dead-letter or delete per queue); return rows affected."""
    return sum(expire_ttl_counts(conn, now_ms))


def prune_dedup(conn: sqlite3.Connection, now_ms: int) -> int:
    """Delete every queue's dedup rows that its own window no longer covers."""
    return conn.execute(PRUNE_DEDUP_SQL, {"now": now_ms}).rowcount


def prune_receipts(conn: sqlite3.Connection, now_ms: int) -> int:
    """Delete settlement receipts whose replay window has passed."""
    return conn.execute(PRUNE_RECEIPTS_SQL, {"now": now_ms}).rowcount


def prune_attempts(conn: sqlite3.Connection, now_ms: int) -> int:
    """Delete receive-attempt records whose replay window has passed."""
    return conn.execute(PRUNE_ATTEMPTS_SQL, {"now": now_ms}).rowcount


def reclaim_free_pages(
    conn: sqlite3.Connection,
    *,
    force: bool = False,
    threshold_pages: int = RECLAIM_FREELIST_PAGES,
    checkpoint_sql: str = WAL_CHECKPOINT_TRUNCATE_SQL,
) -> int:
    """Return free pages to the OS if the freelist is at least ``threshold_pages`` (or
    ``force``); return the pages freed. Needs a file DB and no open transaction.
    ``checkpoint_sql`` is the store's checkpoint (PASSIVE under Litestream: store.py)."""
    if conn.in_transaction:
        raise RuntimeError("reclaim_free_pages must run outside a transaction")
    before: int = conn.execute(FREELIST_COUNT_SQL).fetchone()[0]
    if not force and before < threshold_pages:
        return 0
    conn.execute(checkpoint_sql).fetchall()
    conn.executescript(INCREMENTAL_VACUUM_SQL)  # steps to DONE: every free page
    conn.execute(checkpoint_sql).fetchall()
    after: int = conn.execute(FREELIST_COUNT_SQL).fetchone()[0]
    return max(before - after, 0)


@dataclass(frozen=True, slots=True)
class DLQBounds:
    """Engine-default DLQ retention bounds; 0 (or negative) = no bound."""

    max_age_ms: int = 0
    max_count: int = 0
    max_bytes: int = 0


def effective_bound(per_queue: int, engine_default: int) -> int:
    """Resolve a per-queue DLQ bound: 0 inherits, >0 overrides, <0 unbounded. 0 = no bound."""
    if per_queue > 0:
        return per_queue
    if per_queue < 0:
        return 0
    return max(engine_default, 0)


def enforce_dlq_retention(
    conn: sqlite3.Connection,
    now_ms: int,
    defaults: DLQBounds,
    *,
    batch: int = DLQ_DELETE_BATCH,
    max_batches: int = DLQ_MAX_BATCHES,
) -> int:
    """Apply age, count then byte bounds to each queue's DLQ, oldest first, at most
    ``max_batches`` deletes of ``batch`` rows per dimension per queue. Returns rows deleted."""
    by_queue = enforce_dlq_retention_by_queue(
        conn, now_ms, defaults, batch=batch, max_batches=max_batches
    )
    return sum(by_queue.values())


def enforce_dlq_retention_by_queue(
    conn: sqlite3.Connection,
    now_ms: int,
    defaults: DLQBounds,
    *,
    batch: int = DLQ_DELETE_BATCH,
    max_batches: int = DLQ_MAX_BATCHES,
) -> Counter[str]:
    """``enforce_dlq_retention``, returning the rows deleted per queue."""
    out: Counter[str] = Counter()
    for name, age, count, size in conn.execute(DLQ_QUEUES_SQL).fetchall():
        deleted = 0
        max_age = effective_bound(age, defaults.max_age_ms)
        max_count = effective_bound(count, defaults.max_count)
        max_bytes = effective_bound(size, defaults.max_bytes)
        if max_age:
            deleted += _delete_aged(conn, name, now_ms - max_age, batch, max_batches)
        if max_count:
            row = conn.execute(DLQ_COUNT_CUTOFF_SQL, {"queue": name, "keep": max_count}).fetchone()
            if row is not None:
                deleted += _delete_through(conn, name, row[0], batch, max_batches)
        if max_bytes:
            params = {"queue": name, "max_bytes": max_bytes}
            row = conn.execute(DLQ_BYTES_CUTOFF_SQL, params).fetchone()
            if row is not None:
                deleted += _delete_through(conn, name, row[0], batch, max_batches)
        if deleted:
            out[name] += deleted
    return out


def _delete_aged(
    conn: sqlite3.Connection, queue: str, cutoff: int, batch: int, max_batches: int
) -> int:
    deleted, after = 0, 0
    for _ in range(max_batches):
        params = {"queue": queue, "after": after, "cutoff": cutoff, "batch": batch}
        ids = [row[0] for row in conn.execute(DLQ_DELETE_AGED_SQL, params).fetchall()]
        deleted += len(ids)
        if len(ids) < batch:
            break
        after = max(ids)
    return deleted


def _delete_through(
    conn: sqlite3.Connection, queue: str, cutoff: int, batch: int, max_batches: int
) -> int:
    deleted = 0
    for _ in range(max_batches):
        params = {"queue": queue, "cutoff": cutoff, "batch": batch}
        n = conn.execute(DLQ_DELETE_THROUGH_SQL, params).rowcount
        deleted += n
        if n < batch:
            break
    return deleted

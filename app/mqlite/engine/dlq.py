"""Administrative dead-letter operations: Redrive and Purge (original-behaviour §6).

Both work on one chunk inside the caller's transaction. A chunk is the first ``max``
dead letters of the queue by id (optionally only those enqueued before ``now -
older_than_ms``); it is fixed once by its size and last id, and every following
statement re-selects exactly that set with ``id <= :last`` on idx_msg_dlq (queue, id) —
nothing else writes inside the transaction, so no id list travels through Python.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from mqlite.errors import InvalidArgument, QueueNotFound

# The chunk: size and last id of the oldest ``limit`` matching dead letters (-1 = all).
# Seeks idx_msg_dlq; enqueued_at is a row filter (it is not indexed).
DLQ_CHUNK_SQL = """
SELECT COUNT(*), MAX(id) FROM (
    SELECT id FROM messages
    WHERE queue = :queue AND state = 'dead_lettered'
      AND (:older_than <= 0 OR enqueued_at < :cutoff)
    ORDER BY id LIMIT :limit
)
"""

# Same-queue redrive: back to active in place, as if never delivered (no last error);
# enqueued_at and expires_at are kept (an expired message returns to the DLQ on the next
# TTL sweep).
REDRIVE_IN_PLACE_SQL = """
UPDATE messages SET
    state = 'active',
    delivery_count = 0,
    lock_token = NULL,
    locked_until = 0,
    visible_at = 0,
    dead_letter_reason = NULL,
    dead_letter_description = NULL,
    last_error = NULL,
    last_error_at = 0
WHERE queue = :queue AND state = 'dead_lettered' AND id <= :last
  AND (:older_than <= 0 OR enqueued_at < :cutoff)
"""

# Cross-queue redrive: a fresh copy in the target (new seq, enqueued now, no TTL, same
# metadata and body), in source id order so the target keeps their relative order. The
# target's dedup and group rules are deliberately not applied (§6 Redrive).
REDRIVE_COPY_SQL = """
INSERT INTO messages (queue, state, visible_at, locked_until, lock_token, delivery_count,
                      enqueued_at, expires_at, message_id, correlation_id, reply_to, group_id,
                      content_type, subject, properties, body, external_body_bytes)
SELECT :target, 'active', 0, 0, NULL, 0, :now, 0, message_id, correlation_id, reply_to,
       group_id, content_type, subject, properties, body, external_body_bytes
FROM messages
WHERE queue = :queue AND state = 'dead_lettered' AND id <= :last
  AND (:older_than <= 0 OR enqueued_at < :cutoff)
ORDER BY id
"""

# The copies' external bodies: AUTOINCREMENT gave the n copies consecutive ids ending at
# last_insert_rowid(), in source id order, so the k-th source row's copy is :first + k - 1.
REDRIVE_COPY_BODIES_SQL = """
INSERT INTO bodies (id, body)
SELECT :first + c.k - 1, b.body
FROM (SELECT id, external_body_bytes,
             row_number() OVER (ORDER BY id) AS k
      FROM messages
      WHERE queue = :queue AND state = 'dead_lettered' AND id <= :last
        AND (:older_than <= 0 OR enqueued_at < :cutoff)) c
JOIN bodies b ON b.id = c.id
WHERE c.external_body_bytes > 0
"""

# Removes the chunk: the originals after a cross-queue copy, or a Purge.
DLQ_DELETE_CHUNK_SQL = """
DELETE FROM messages
WHERE queue = :queue AND state = 'dead_lettered' AND id <= :last
  AND (:older_than <= 0 OR enqueued_at < :cutoff)
"""

# A cross-queue target must be a queue row (a topic name is not): primary-key probe.
QUEUE_EXISTS_SQL = "SELECT 1 FROM queues WHERE name = :name"


PACE_INTERVAL_MS = 1000  # a paced redrive moves one chunk of rate_per_sec per second


def paced_chunks(max: int, rate_per_sec: int) -> Iterator[int]:
    """The chunk sizes of a redrive of at most ``max`` (0 = all) at ``rate_per_sec`` (0 =
    unpaced: one chunk). The caller stops early once a chunk comes back short; the embedded
    engine and the HTTP server both walk this plan, each waiting its own way in between."""
    if rate_per_sec <= 0:
        yield max
        return
    moved = 0
    while max <= 0 or moved < max:
        chunk = rate_per_sec if max <= 0 else min(rate_per_sec, max - moved)
        yield chunk
        moved += chunk


def _validate(max: int, older_than_ms: int) -> None:
    if max < 0:
        raise InvalidArgument("max must not be negative")
    if older_than_ms < 0:
        raise InvalidArgument("older_than_ms must not be negative")


def _chunk(
    conn: sqlite3.Connection, now_ms: int, queue: str, max: int, older_than_ms: int
) -> tuple[int, int, dict[str, int | str]]:
    """Fix the chunk: ``(size, last id, parameters that re-select exactly it)``."""
    params: dict[str, int | str] = {
        "queue": queue,
        "older_than": older_than_ms,
        "cutoff": now_ms - older_than_ms,
    }
    count, last = conn.execute(
        DLQ_CHUNK_SQL, {**params, "limit": max if max > 0 else -1}
    ).fetchone()
    params["last"] = last or 0
    return count, last or 0, params


def redrive(
    conn: sqlite3.Connection,
    now_ms: int,
    queue: str,
    *,
    target: str | None,
    max: int,
    older_than_ms: int,
) -> tuple[int, int]:
    """Move one chunk of ``queue``'s dead letters back to active, in place or into
    ``target``. Returns ``(moved, last source id moved)``; ``(0, 0)`` if none."""
    _validate(max, older_than_ms)
    cross = bool(target) and target != queue
    if cross and conn.execute(QUEUE_EXISTS_SQL, {"name": target}).fetchone() is None:
        raise QueueNotFound(f"target queue not found: {target}")
    moved, last, chunk = _chunk(conn, now_ms, queue, max, older_than_ms)
    if not moved:
        return 0, 0
    if cross:
        cur = conn.execute(REDRIVE_COPY_SQL, {**chunk, "target": target, "now": now_ms})
        first = int(cur.lastrowid or 0) - moved + 1
        conn.execute(REDRIVE_COPY_BODIES_SQL, {**chunk, "first": first})
        conn.execute(DLQ_DELETE_CHUNK_SQL, chunk)
    else:
        conn.execute(REDRIVE_IN_PLACE_SQL, chunk)
    return moved, last


def purge(
    conn: sqlite3.Connection, now_ms: int, queue: str, *, max: int, older_than_ms: int
) -> int:
    """Delete ``queue``'s dead letters: the oldest ``max`` (0 = all) enqueued before
    ``now - older_than_ms`` (0 = any age). Both zero purges the whole DLQ."""
    _validate(max, older_than_ms)
    count, _, chunk = _chunk(conn, now_ms, queue, max, older_than_ms)
    if not count:
        return 0
    deleted: int = conn.execute(DLQ_DELETE_CHUNK_SQL, chunk).rowcount
    return deleted

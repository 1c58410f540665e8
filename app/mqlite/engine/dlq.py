"""Administrative dead-letter operations: Redrive and Purge (original-behaviour §6).

Both work on one chunk inside the caller's transaction. A chunk is the first ``max``
dead letters of the queue by id (optionally only those enqueued before ``now -
older_than_ms``, optionally only the seq_numbers named — the console's selection, bound
as one JSON array read with json_each, so the SQL text never varies with it); it is fixed
once by its size and last id, and every following statement re-selects exactly that set
with ``id <= :last`` on idx_msg_dlq (queue, id) — nothing else writes inside the
transaction, so no id list is rebuilt in Python.

A whole Redrive or Purge is a *walk* of chunks of at most ``CHUNK_ROWS``, each its own
transaction, so the writer serves other work between them (issue 26: an unpaced redrive
of 200,000 dead letters in one transaction held every other queue's Sends for 2.5 s).
The walk is fixed by its first chunk (``Walk``): the last dead letter's id then, and the
``now`` its age bound is judged by; each chunk continues after the previous one's last
id, so every dead letter is taken at most once (one redriven in place and dead-lettered
again during the walk keeps its id and is not taken again), and a crash between chunks
leaves the chunks done moved and the rest in the DLQ, each message once.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from mqlite import defaults
from mqlite.errors import InvalidArgument, QueueNotFound

# The chunk: size and last id of the oldest ``limit`` matching dead letters (-1 = all).
# Seeks idx_msg_dlq; enqueued_at is a row filter (it is not indexed).
DLQ_CHUNK_SQL = """
SELECT COUNT(*), MAX(id) FROM (
    SELECT id FROM messages
    WHERE queue = :queue AND state = 'dead_lettered' AND id > :after AND id <= :bound
      AND (:older_than <= 0 OR enqueued_at < :cutoff)
      AND (:seqs IS NULL OR id IN (SELECT value FROM json_each(:seqs)))
    ORDER BY id LIMIT :limit
)
"""

# The last dead letter of the queue: where a walk ends (a seek on idx_msg_dlq).
DLQ_LAST_SQL = """
SELECT MAX(id) FROM messages WHERE queue = :queue AND state = 'dead_lettered'
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
WHERE queue = :queue AND state = 'dead_lettered' AND id > :after AND id <= :last
  AND (:older_than <= 0 OR enqueued_at < :cutoff)
  AND (:seqs IS NULL OR id IN (SELECT value FROM json_each(:seqs)))
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
WHERE queue = :queue AND state = 'dead_lettered' AND id > :after AND id <= :last
  AND (:older_than <= 0 OR enqueued_at < :cutoff)
  AND (:seqs IS NULL OR id IN (SELECT value FROM json_each(:seqs)))
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
      WHERE queue = :queue AND state = 'dead_lettered' AND id > :after AND id <= :last
        AND (:older_than <= 0 OR enqueued_at < :cutoff)
        AND (:seqs IS NULL OR id IN (SELECT value FROM json_each(:seqs)))) c
JOIN bodies b ON b.id = c.id
WHERE c.external_body_bytes > 0
"""

# Removes the chunk: the originals after a cross-queue copy, or a Purge.
DLQ_DELETE_CHUNK_SQL = """
DELETE FROM messages
WHERE queue = :queue AND state = 'dead_lettered' AND id > :after AND id <= :last
  AND (:older_than <= 0 OR enqueued_at < :cutoff)
  AND (:seqs IS NULL OR id IN (SELECT value FROM json_each(:seqs)))
"""

# A cross-queue target must be a queue row (a topic name is not): primary-key probe.
QUEUE_EXISTS_SQL = "SELECT 1 FROM queues WHERE name = :name"


PACE_INTERVAL_MS = 1000  # a paced redrive moves one chunk of rate_per_sec per second
CHUNK_ROWS = 1000  # dead letters per transaction of a Redrive or Purge (~10 ms of writer)
_NO_BOUND = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class Walk:
    """Where a chunked Redrive/Purge stands: dead letters up to id ``after`` are done;
    ``bound`` is the last id it may take and ``since`` the ``now`` its age bound is judged
    by, both fixed by its first chunk (``start_walk``)."""

    after: int = 0
    bound: int = _NO_BOUND
    since: int = 0  # 0: each chunk's own now

    def past(self, last: int) -> Walk:
        """The walk after a chunk that ended at id ``last``."""
        return Walk(last, self.bound, self.since) if last else self


def start_walk(conn: sqlite3.Connection, now_ms: int, queue: str) -> Walk:
    """Fix a walk of ``queue``'s dead letters as they are now (in its first chunk)."""
    last = conn.execute(DLQ_LAST_SQL, {"queue": queue}).fetchone()[0]
    return Walk(0, int(last or 0), now_ms)


def chunk_plan(max: int, rate_per_sec: int) -> Iterator[tuple[int, bool]]:
    """The chunks of a Redrive or Purge of at most ``max`` (0 = all): ``(rows, pause)``,
    each at most ``CHUNK_ROWS`` rows, one transaction; ``pause``: wait
    ``PACE_INTERVAL_MS`` after it (a paced redrive moves ``rate_per_sec`` per second;
    unpaced, 0, never pauses). The caller stops early once a chunk comes back short;
    the embedded engine and the HTTP server both walk this plan, each waiting its own
    way in between."""
    done = 0
    while max <= 0 or done < max:
        quota = rate_per_sec if rate_per_sec > 0 else CHUNK_ROWS  # one second's, paced
        if max > 0:
            quota = min(quota, max - done)
        while quota > 0:
            rows = min(quota, CHUNK_ROWS)
            quota -= rows
            done += rows
            yield rows, rate_per_sec > 0 and quota == 0


def _validate(max: int, older_than_ms: int, seq_numbers: Sequence[int]) -> None:
    if len(seq_numbers) > defaults.MAX_DLQ_SELECTION:
        raise InvalidArgument(
            f"seq_numbers: at most {defaults.MAX_DLQ_SELECTION} per call, got {len(seq_numbers)}"
        )
    if max < 0:
        raise InvalidArgument("max must not be negative")
    if older_than_ms < 0:
        raise InvalidArgument("older_than_ms must not be negative")


def _chunk(
    conn: sqlite3.Connection,
    now_ms: int,
    queue: str,
    max: int,
    older_than_ms: int,
    walk: Walk | None,
    seq_numbers: Sequence[int] = (),
) -> tuple[int, int, dict[str, int | str | None]]:
    """Fix the chunk: ``(size, last id, parameters that re-select exactly it)``."""
    walk = walk or Walk()
    params: dict[str, int | str | None] = {
        "queue": queue,
        "older_than": older_than_ms,
        "cutoff": (walk.since or now_ms) - older_than_ms,
        "after": walk.after,
        "seqs": json.dumps([int(s) for s in seq_numbers]) if seq_numbers else None,
    }
    count, last = conn.execute(
        DLQ_CHUNK_SQL, {**params, "bound": walk.bound, "limit": max if max > 0 else -1}
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
    walk: Walk | None = None,
    seq_numbers: Sequence[int] = (),
) -> tuple[int, int]:
    """Move one chunk of ``queue``'s dead letters back to active, in place or into
    ``target`` (the next of ``walk``, if given). Returns ``(moved, last source id
    moved)``; ``(0, 0)`` if none."""
    _validate(max, older_than_ms, seq_numbers)
    cross = bool(target) and target != queue
    if cross and conn.execute(QUEUE_EXISTS_SQL, {"name": target}).fetchone() is None:
        raise QueueNotFound(f"target queue not found: {target}")
    moved, last, chunk = _chunk(conn, now_ms, queue, max, older_than_ms, walk, seq_numbers)
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
    conn: sqlite3.Connection,
    now_ms: int,
    queue: str,
    *,
    max: int,
    older_than_ms: int,
    walk: Walk | None = None,
    seq_numbers: Sequence[int] = (),
) -> tuple[int, int]:
    """Delete ``queue``'s dead letters: the oldest ``max`` (0 = all) enqueued before
    ``now - older_than_ms`` (0 = any age), the next of ``walk`` if given. Both zero
    purges the whole DLQ; ``seq_numbers`` narrows it to those dead letters. Returns
    ``(purged, last id purged)``; ``(0, 0)`` if none."""
    _validate(max, older_than_ms, seq_numbers)
    count, last, chunk = _chunk(conn, now_ms, queue, max, older_than_ms, walk, seq_numbers)
    if not count:
        return 0, 0
    deleted: int = conn.execute(DLQ_DELETE_CHUNK_SQL, chunk).rowcount
    return deleted, last

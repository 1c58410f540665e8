"""Duplicate detection inside the send transaction (api-reference "message_id, dedup").

Per queue, keyed by ``message_id`` (or the body's SHA-256 when the id is empty). Only the
body is compared. The window is anchored at the first accepted send: a duplicate does not
refresh ``seen_at``. The row outlives the message, so a resend after completion within the
window is still collapsed onto the original (now settled) sequence number.
"""

from __future__ import annotations

import hashlib
import sqlite3

# PK (queue, message_id) seek; `seen_at > now - window` is strict (a row exactly one
# window old is out of the window).
LOOKUP_DEDUP_SQL = """
SELECT request_hash, seq_number FROM dedup
 WHERE queue = ? AND message_id = ? AND seen_at > ?
"""

# Overwrites a stale out-of-window row for the same key.
UPSERT_DEDUP_SQL = """
INSERT INTO dedup (queue, message_id, request_hash, seq_number, seen_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT(queue, message_id) DO UPDATE SET
    request_hash = excluded.request_hash,
    seq_number = excluded.seq_number,
    seen_at = excluded.seen_at
"""

DUPLICATE = "duplicate"
CONFLICT = "conflict"


def body_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def check(
    conn: sqlite3.Connection,
    now_ms: int,
    queue: str,
    window_ms: int,
    message_id: str,
    digest: str,
) -> tuple[str, int] | None:
    """Return (DUPLICATE, original seq), (CONFLICT, 0), or None when the key is new."""
    key = message_id or digest
    row = conn.execute(LOOKUP_DEDUP_SQL, (queue, key, now_ms - window_ms)).fetchone()
    if row is None:
        return None
    if row[0] == digest:
        return DUPLICATE, int(row[1])
    return CONFLICT, 0


def record(
    conn: sqlite3.Connection, now_ms: int, queue: str, message_id: str, digest: str, seq: int
) -> None:
    conn.execute(UPSERT_DEDUP_SQL, (queue, message_id or digest, digest, seq, now_ms))

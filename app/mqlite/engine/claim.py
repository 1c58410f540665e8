"""Claiming: Peek-Lock is one atomic UPDATE ... RETURNING per message.

A row is claimable iff it is ``active``, visible (``visible_at <= now``), not expired
(``expires_at = 0 OR expires_at > now``) and no earlier row of its group (strict_fifo: of
its queue) is ``deferred``, ``scheduled`` or ``locked`` -- whatever the lock's expiry, so an
expired-but-unreaped head keeps its group in order until the reaper redelivers it first.
The smallest such id wins. A batch runs the claim in a loop inside one transaction.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import sqlite3
from typing import Any

from mqlite import defaults, errors
from mqlite.engine import claim_pipelined
from mqlite.engine.budget import MESSAGE_OVERHEAD_BYTES, encoded_size
from mqlite.engine.remote import pipelined
from mqlite.engine.rows import CLAIM_COLUMNS, CLAIM_METADATA, claimed_message
from mqlite.types import Message, OrderingMode, QueueInfo, Settler

# Both claim statements RETURN rows.CLAIM_COLUMNS: what the message shows and the claim did
# not set from its own parameters (each column returned costs the drain; rows.py).
#
# standard and group_fifo share this statement (ungrouped rows have no head-of-line).
# Do NOT merge the three EXISTS into one `state IN (...)` or an OR of states: the planner
# cannot match that to a partial index and falls back to a rowid scan -- O(n) per
# candidate, O(n^2) to drain a blocked backlog (docs/architecture.md, "Staying fast"; MQLITE-22).
CLAIM_GROUPED_SQL = f"""
UPDATE messages
   SET state = 'locked', locked_until = :until, lock_token = :token,
       delivery_count = delivery_count + 1
 WHERE id = (
   SELECT m.id FROM messages m
    WHERE m.queue = :queue AND m.state = 'active'
      AND m.visible_at <= :now
      AND (m.expires_at = 0 OR m.expires_at > :now)
      AND (m.group_id IS NULL OR NOT (
            EXISTS (SELECT 1 FROM messages b
                     WHERE b.queue = m.queue AND b.group_id = m.group_id
                       AND b.state = 'deferred' AND b.id < m.id)
         OR EXISTS (SELECT 1 FROM messages b
                     WHERE b.queue = m.queue AND b.group_id = m.group_id
                       AND b.state = 'scheduled' AND b.id < m.id)
         OR EXISTS (SELECT 1 FROM messages b
                     WHERE b.queue = m.queue AND b.group_id = m.group_id
                       AND b.state = 'locked' AND b.id < m.id)))
    ORDER BY m.id
    LIMIT 1)
RETURNING {CLAIM_COLUMNS}
"""

# strict_fifo: every deferred/scheduled/locked row blocks every later row of the queue, so
# the claimable head must precede the earliest blocker. Three MIN() seeks (one per state's
# partial index) bound the search: O(log n) however deep the blocked backlog is.
CLAIM_STRICT_SQL = f"""
UPDATE messages
   SET state = 'locked', locked_until = :until, lock_token = :token,
       delivery_count = delivery_count + 1
 WHERE id = (
   SELECT m.id FROM messages m
    WHERE m.queue = :queue AND m.state = 'active'
      AND m.id < MIN(
            COALESCE((SELECT MIN(b.id) FROM messages b
                       WHERE b.queue = :queue AND b.state = 'deferred'), 9223372036854775807),
            COALESCE((SELECT MIN(b.id) FROM messages b
                       WHERE b.queue = :queue AND b.state = 'scheduled'), 9223372036854775807),
            COALESCE((SELECT MIN(b.id) FROM messages b
                       WHERE b.queue = :queue AND b.state = 'locked'), 9223372036854775807))
      AND m.visible_at <= :now
      AND (m.expires_at = 0 OR m.expires_at > :now)
    ORDER BY m.id
    LIMIT 1)
RETURNING {CLAIM_COLUMNS}
"""

# Receive-and-delete grants no lease: the row goes in the same transaction it was claimed.
DELETE_CLAIMED_SQL = "DELETE FROM messages WHERE id = ? AND lock_token = ?"

LOOKUP_ATTEMPT_SQL = """
SELECT response FROM receive_attempts WHERE queue = ? AND attempt_id = ? AND expires_at > ?
"""

SAVE_ATTEMPT_SQL = """
INSERT OR REPLACE INTO receive_attempts (queue, attempt_id, response, created_at, expires_at)
VALUES (?, ?, ?, ?, ?)
"""


def new_lock_token() -> str:
    """128 random bits from the OS CSPRNG, as 32 lowercase hex characters."""
    return secrets.token_hex(16)


def claim_batch(
    conn: sqlite3.Connection,
    now_ms: int,
    queue: QueueInfo,
    max_messages: int,
    *,
    delete: bool,
    settler: Settler,
) -> list[Message]:
    """Claim up to ``max_messages`` with one ``now``; stop once the byte budget is crossed.

    Peek-lock batches hold one message per group (the claimed head blocks its successors);
    receive-and-delete removes each row at once, so the group's next message may follow.
    The messages come bound: a leased one to ``settler``, a lease-less one (receive-and-
    delete) to ``errors.NO_LOCK``.
    """
    sql = (
        CLAIM_STRICT_SQL
        if queue.config.ordering_mode == OrderingMode.STRICT_FIFO
        else (CLAIM_GROUPED_SQL)
    )
    name, until = queue.name, now_ms + queue.config.lock_duration_ms
    params = {"queue": name, "now": now_ms, "until": until}
    loop: sqlite3.Connection = conn  # (for a chunk that crossed the byte budget)
    if pipelined(conn):  # a round trip per statement: claims in chunks

        def build(row: tuple[Any, ...], token: str) -> Message:
            if delete:
                return claimed_message(row, name, "", 0, errors.NO_LOCK)
            return claimed_message(row, name, token, until, settler)

        return claim_pipelined.claim_batch(
            conn,
            sql,
            params,
            max_messages,
            delete=delete,
            new_token=new_lock_token,
            build=build,
            one_by_one=lambda n: _claim_loop(loop, sql, dict(params), n, delete, settler),
        )
    return _claim_loop(conn, sql, params, max_messages, delete, settler)


def _claim_loop(
    conn: sqlite3.Connection,
    sql: str,
    params: dict[str, Any],
    max_messages: int,
    delete: bool,
    settler: Settler,
) -> list[Message]:
    """One claim per statement until ``max_messages``, an empty claim or the budget."""
    out: list[Message] = []
    append = out.append
    budget = 0
    execute = conn.execute
    queue, until = params["queue"], params["until"]
    # Every token of the batch from one read of the OS CSPRNG (128 bits each, as
    # new_lock_token): one system call and no Python call per claimed message (hot path).
    tokens = os.urandom(16 * max_messages).hex()
    base_size = MESSAGE_OVERHEAD_BYTES + (0 if delete else 32)
    for start in range(0, 32 * max_messages, 32):
        token = tokens[start : start + 32]
        params["token"] = token
        row = execute(sql, params).fetchone()
        if row is None:
            break
        if delete:  # the receive-and-delete view: no token, no lease, nothing to settle
            execute(DELETE_CLAIMED_SQL, (row[0], token))
            msg = claimed_message(row, queue, "", 0, errors.NO_LOCK)
        else:
            msg = claimed_message(row, queue, token, until, settler)
        append(msg)
        # encoded_size inlined for a message without metadata (every drain's): a claimed
        # message has no state or dead-letter fields, and its token is 32 hex digits (one
        # JSON byte each; "" once deleted). Metadata present: encoded_size, exactly.
        if any(row[CLAIM_METADATA]):
            budget += encoded_size(msg)
        else:
            budget += base_size + (len(msg.body) + 2) // 3 * 4
        if budget >= defaults.RESPONSE_BYTE_BUDGET:
            break
    return out


# -- idempotent receive (receive_attempt_id) -----------------------------------------------


def lookup_attempt(
    conn: sqlite3.Connection, now_ms: int, queue: str, attempt_id: str
) -> list[Message] | None:
    """The exact messages (same seqs, tokens, counts) a live attempt returned, or None."""
    row = conn.execute(LOOKUP_ATTEMPT_SQL, (queue, attempt_id, now_ms)).fetchone()
    if row is None:
        return None
    return [_decode_message(d) for d in json.loads(row[0])]


def save_attempt(
    conn: sqlite3.Connection,
    now_ms: int,
    queue: QueueInfo,
    attempt_id: str,
    messages: list[Message],
) -> None:
    """Record a non-empty claim (an empty one is not recorded: a retry may claim fresh)."""
    ttl = max(queue.config.lock_duration_ms, defaults.RECEIVE_ATTEMPT_MIN_TTL_MS)
    response = json.dumps([_encode_message(m) for m in messages], separators=(",", ":"))
    row = (queue.name, attempt_id, response, now_ms, now_ms + ttl)
    if pipelined(conn):  # nothing reads it: it travels with the COMMIT
        conn.defer(SAVE_ATTEMPT_SQL, row)
    else:
        conn.execute(SAVE_ATTEMPT_SQL, row)


def _encode_message(m: Message) -> dict[str, object]:
    return {
        "seq_number": m.seq_number,
        "queue": m.queue,
        "body": base64.b64encode(m.body).decode("ascii"),
        "message_id": m.message_id,
        "group_id": m.group_id,
        "subject": m.subject,
        "correlation_id": m.correlation_id,
        "reply_to": m.reply_to,
        "content_type": m.content_type,
        "properties": m.properties,
        "delivery_count": m.delivery_count,
        "enqueued_at_ms": m.enqueued_at_ms,
        "locked_until_ms": m.locked_until_ms,
        "lock_token": m.lock_token,
        "last_error": m.last_error,
        "last_error_at_ms": m.last_error_at_ms,
    }


def _decode_message(d: dict[str, object]) -> Message:
    fields = dict(d)
    fields["body"] = base64.b64decode(str(fields["body"]))
    return Message(**fields)  # type: ignore[arg-type]

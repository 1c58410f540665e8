"""Settlement: complete / abandon / reject / defer / renew, fenced and idempotent.

A new effect needs the current token AND an unexpired lease (``locked_until > now``;
equality is already expired, even before the reaper runs). Each successful verb writes a
receipt keyed by the whole request -- queue, seq, token, operation and the arguments that
change its effect -- in the same transaction. A request matching zero rows succeeds only
if a live receipt for exactly that request exists (a lost response being retried);
anything else is ``LockLost``.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
from collections.abc import Sequence

from mqlite import defaults, errors
from mqlite.engine import retry
from mqlite.engine.claim import new_lock_token
from mqlite.engine.remote import pipelined
from mqlite.engine.rows import MESSAGE_COLUMNS, row_to_message
from mqlite.types import Message, QueueInfo

OP_COMPLETE = "completed"
OP_ABANDON = "abandoned"
OP_REJECT = "dead_lettered"
OP_DEFER = "deferred"
DEFAULT_REJECT_REASON = "AppRequested"
MAX_DELIVERY_REASON = "MaxDeliveryCountExceeded"

# The fence shared by every verb: this row, this queue, this token, a live lease.
_FENCE = (
    "id = :seq AND queue = :queue AND lock_token = :token AND state = 'locked' "
    "AND locked_until > :now"
)

COMPLETE_SQL = f"DELETE FROM messages WHERE {_FENCE}"


# At the delivery limit an abandon dead-letters (count was incremented at claim, so a
# message is delivered at most max times), its description carrying the last error; with
# a delay (explicit, or the queue's retry policy: engine/retry.py) it parks in
# `scheduled`, which keeps holding its group's line on ordered paths until redelivered.
# :error NULL (none given) keeps the message's previous last error.
def redeliver_sql(
    *, delayed: str, visible: str, error: str, dead_description: str, error_at: str, where: str
) -> str:
    """One template for a lease given back for redelivery (an Abandon; the reaper's
    parking of an expired lease on a queue with a retry policy): dead-lettered at the
    delivery limit (``:max``), else ``scheduled`` at ``visible`` while ``delayed``, else
    active; the failure is recorded as the last error."""
    return f"""
UPDATE messages SET
    state = CASE WHEN delivery_count >= :max THEN 'dead_lettered'
                 WHEN {delayed} THEN 'scheduled' ELSE 'active' END,
    dead_letter_reason = CASE WHEN delivery_count >= :max THEN '{MAX_DELIVERY_REASON}'
                              ELSE dead_letter_reason END,
    dead_letter_description = CASE WHEN delivery_count >= :max
                                   THEN {dead_description}
                                   ELSE dead_letter_description END,
    visible_at = CASE WHEN delivery_count >= :max THEN visible_at
                      ELSE {visible} END,
    last_error = {error},
    last_error_at = {error_at},
    lock_token = NULL, locked_until = 0
 WHERE {where}
"""


# RETURNING the state it left: the caller counts a dead-lettering from the same statement
# (no second probe of the row).
ABANDON_SQL = (
    redeliver_sql(
        delayed=":delay > 0",
        visible=":now + MAX(:delay, 0)",
        error="COALESCE(:error, last_error)",
        dead_description="COALESCE(:error, last_error)",
        error_at="CASE WHEN :error IS NULL THEN last_error_at ELSE :now END",
        where=_FENCE,
    )
    + "RETURNING state\n"
)

# The delivery count a retry policy needs, read only on a queue that has one (the fence
# of the abandon itself decides; a row this misses is refused by it).
LOCKED_COUNT_SQL = """
SELECT delivery_count FROM messages
 WHERE id = ? AND queue = ? AND lock_token = ? AND state = 'locked'
"""

REJECT_SQL = f"""
UPDATE messages SET state = 'dead_lettered', dead_letter_reason = :reason,
    dead_letter_description = :description, lock_token = NULL, locked_until = 0
 WHERE {_FENCE}
"""

DEFER_SQL = f"""
UPDATE messages SET state = 'deferred', lock_token = NULL, locked_until = 0
 WHERE {_FENCE}
"""

# Never shortens a lease (a stale retry or a clock step back keeps the later deadline) and
# never revives an expired one (the fence requires locked_until > now).
RENEW_SQL = f"""
UPDATE messages SET locked_until = MAX(locked_until, :now + :lock)
 WHERE {_FENCE}
RETURNING locked_until
"""

INSERT_RECEIPT_SQL = """
INSERT OR REPLACE INTO settlement_receipts
    (lock_token, queue, seq_number, operation, args, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
"""

# Expiry is judged at statement time: a receipt merely not yet pruned cannot replay.
LOOKUP_RECEIPT_SQL = """
SELECT 1 FROM settlement_receipts
 WHERE queue = ? AND seq_number = ? AND lock_token = ? AND operation = ? AND args = ?
   AND expires_at > ?
"""

# One pair's Complete, as a statement of its own: the remote batch queues one per pair
# (settle_pipelined.py); a local batch deletes a chunk of pairs at once (settle_batch.py).
COMPLETE_PAIR_SQL = """
DELETE FROM messages
 WHERE id = ? AND queue = ? AND lock_token = ? AND state = 'locked' AND locked_until > ?
"""

RECEIVE_DEFERRED_SQL = f"""
UPDATE messages SET state = 'locked', lock_token = :token, locked_until = :until,
    delivery_count = delivery_count + 1
 WHERE id = :seq AND queue = :queue AND state = 'deferred'
RETURNING {MESSAGE_COLUMNS}
"""


def _length_prefixed(*parts: str) -> str:
    """Hash of ``<len>:<part>`` per part: unambiguous, fixed size, on-disk compatible."""
    text = "".join(f"{len(p.encode('utf-8'))}:{p}" for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def abandon_args(delay_ms: int, error: str | None = None) -> str:
    """The receipt key of an abandon; without an error, exactly the one stored before
    errors existed (so receipts written by an older version still replay)."""
    if error is None:
        return _length_prefixed(str(int(delay_ms)))
    return _length_prefixed(str(int(delay_ms)), error)


def reject_args(reason: str, description: str) -> str:
    return _length_prefixed(reason or DEFAULT_REJECT_REASON, description)


def _settle(
    conn: sqlite3.Connection,
    now_ms: int,
    sql: str,
    params: dict[str, object],
    operation: str,
    args: str,
) -> bool:
    """Run one fenced verb; return True for a fresh effect, False for a receipt replay."""
    return _settle_returning(conn, now_ms, sql, params, operation, args, False) is not None


def _settle_returning(
    conn: sqlite3.Connection,
    now_ms: int,
    sql: str,
    params: dict[str, object],
    operation: str,
    args: str,
    returning: bool,
) -> tuple[object, ...] | None:
    """``_settle``, for a statement that ``RETURNING`` something when ``returning``: the
    row it returned on a fresh effect (``()`` when not returning), None on a replay."""
    queue, seq, token = params["queue"], params["seq"], params["token"]
    if not token:
        raise errors.LockLost("lock lost: empty lock token")
    params["now"] = now_ms
    cur = conn.execute(sql, params)
    row: tuple[object, ...] | None = (
        cur.fetchone() if returning else (() if cur.rowcount > 0 else None)
    )
    if row is not None:
        receipt = (
            token,
            queue,
            seq,
            operation,
            args,
            now_ms,
            now_ms + defaults.SETTLEMENT_RECEIPT_TTL_MS,
        )
        if pipelined(conn):  # nothing reads it: it travels with the COMMIT
            conn.defer(INSERT_RECEIPT_SQL, receipt)
        else:
            conn.execute(INSERT_RECEIPT_SQL, receipt)
        return row
    if conn.execute(LOOKUP_RECEIPT_SQL, (queue, seq, token, operation, args, now_ms)).fetchone():
        return None
    raise errors.LockLost(
        f"lock lost on message {seq} in {queue!r}: wrong or expired token, or already settled"
    )


def complete(conn: sqlite3.Connection, now_ms: int, queue: str, seq: int, token: str) -> bool:
    params: dict[str, object] = {"queue": queue, "seq": seq, "token": token}
    return _settle(conn, now_ms, COMPLETE_SQL, params, OP_COMPLETE, "")


def abandon(
    conn: sqlite3.Connection,
    now_ms: int,
    queue: QueueInfo,
    seq: int,
    token: str,
    delay_ms: int,
    error: str | None = None,
    draw: retry.Draw = random.random,
) -> str | None:
    """Release for redelivery. ``delay_ms`` > 0 wins; otherwise a queue with a retry
    policy parks the message for the policy's delay (one extra primary-key probe, only
    on such a queue); ``error`` (None = none given) becomes its last error. Returns the
    state the message was left in (``dead_lettered`` at the delivery limit) on a fresh
    effect, None on a receipt replay."""
    config = queue.config
    delay = delay_ms
    if delay_ms <= 0 and config.retry_initial_delay_ms > 0:
        row = conn.execute(LOCKED_COUNT_SQL, (seq, queue.name, token)).fetchone()
        if row is not None:
            delay = retry.delay_ms(config, int(row[0]), draw)
    params: dict[str, object] = {
        "queue": queue.name,
        "seq": seq,
        "token": token,
        "max": config.max_delivery_count,
        "delay": delay,
        "error": error,
    }
    args = abandon_args(delay_ms, error)
    row = _settle_returning(conn, now_ms, ABANDON_SQL, params, OP_ABANDON, args, True)
    return None if row is None else str(row[0])


def reject(
    conn: sqlite3.Connection,
    now_ms: int,
    queue: str,
    seq: int,
    token: str,
    reason: str,
    description: str,
) -> bool:
    params: dict[str, object] = {
        "queue": queue,
        "seq": seq,
        "token": token,
        "reason": reason or DEFAULT_REJECT_REASON,
        "description": description or None,
    }
    return _settle(conn, now_ms, REJECT_SQL, params, OP_REJECT, reject_args(reason, description))


def defer(conn: sqlite3.Connection, now_ms: int, queue: str, seq: int, token: str) -> bool:
    params: dict[str, object] = {"queue": queue, "seq": seq, "token": token}
    return _settle(conn, now_ms, DEFER_SQL, params, OP_DEFER, "")


def renew(conn: sqlite3.Connection, now_ms: int, queue: QueueInfo, seq: int, token: str) -> int:
    """Extend a live lease; return the committed deadline. No receipt: renewing is repeatable."""
    if not token:
        raise errors.LockLost("lock lost: empty lock token")
    params = {
        "queue": queue.name,
        "seq": seq,
        "token": token,
        "now": now_ms,
        "lock": queue.config.lock_duration_ms,
    }
    row = conn.execute(RENEW_SQL, params).fetchone()
    if row is None:
        raise errors.LockLost(
            f"lock lost on message {seq} in {queue.name!r}: wrong or expired token"
        )
    return int(row[0])


def renew_batch_sql(n: int) -> str:
    """One statement for the whole batch: a renewal is a claim about the future, keepable
    only within a single statement (across several, an early lease could lapse).

    The unary ``+`` keeps the planner on rowid lookups of the given pairs instead of
    range-scanning every live lock in idx_msg_locked."""
    values = ",".join(["(?, ?)"] * n)
    return f"""
WITH pairs(seq, token) AS (VALUES {values})
UPDATE messages SET locked_until = MAX(locked_until, ? + ?)
 WHERE id IN (SELECT seq FROM pairs)
   AND (id, lock_token) IN (SELECT seq, token FROM pairs)
   AND queue = ? AND +state = 'locked' AND +locked_until > ?
RETURNING id, lock_token, locked_until
"""


def renew_batch(
    conn: sqlite3.Connection,
    now_ms: int,
    queue: QueueInfo,
    pairs: Sequence[tuple[int, str]],
) -> dict[tuple[int, str], int]:
    """Renew every live pair in ONE statement; return committed deadline per renewed pair."""
    live = [(seq, token) for seq, token in pairs if token]
    if not live:
        return {}
    params: list[object] = [x for pair in live for x in pair]
    params += [now_ms, queue.config.lock_duration_ms, queue.name, now_ms]
    rows = conn.execute(renew_batch_sql(len(live)), params).fetchall()
    return {(int(seq), str(token)): int(until) for seq, token, until in rows}


def receive_deferred(
    conn: sqlite3.Connection, now_ms: int, queue: QueueInfo, seqs: Sequence[int]
) -> list[Message]:
    """Lock deferred messages by seq, in request order; others are silently skipped."""
    out: list[Message] = []
    until = now_ms + queue.config.lock_duration_ms
    for seq in seqs:
        row = conn.execute(
            RECEIVE_DEFERRED_SQL,
            {"token": new_lock_token(), "until": until, "seq": seq, "queue": queue.name},
        ).fetchone()
        if row is not None:
            out.append(row_to_message(row))
    return out

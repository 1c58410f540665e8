"""The audit trail: who changed what, written in the transaction that changed it.

Every change of state that is not a message operation (a queue created, reconfigured or
deleted, a subscription, a purge, a redrive, a key, a cron schedule) calls ``record`` on
the connection of its own writer transaction, so the row commits or rolls back with the
change: a failed or crashed change leaves no row, a committed one always has its row
(issue 35). Rows name the actor and the request, never a token or a message body.

The engine knows no HTTP: the server turns its authenticated principal and the request's
id into an ``Actor`` (``admin:<n>``, ``key:<id>``) and passes it down; the library's own
calls are ``EMBEDDED``. Message operations (Send, Receive, settlement) never come here,
so the hot paths pay nothing.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from mqlite import errors
from mqlite.engine.validate import check_int
from mqlite.types import AuditEntry, QueueInfo

MAX_LIST_LIMIT = 1000
DEFAULT_LIST_LIMIT = 100
MAX_REQUEST_ID_CHARS = 128  # the server bounds it too; a row never carries more
PRUNE_CHUNK_ROWS = 1000  # rows deleted per retention transaction
PRUNE_CHUNKS_PER_PASS = 10  # the most one retention pass deletes: 10,000 rows


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asked for a change, in the engine's words: ``admin:<n>`` (the n-th token of
    MQLITE_TOKENS, from 1), ``key:<id>`` (a managed key), ``anonymous`` (auth off),
    ``embedded`` (the library); ``request_id`` ties the row to the access log."""

    who: str
    request_id: str = ""


EMBEDDED = Actor("embedded")

INSERT_SQL = (
    "INSERT INTO audit_log (at, actor, request_id, action, queue, detail) VALUES (?, ?, ?, ?, ?, ?)"
)
COLUMNS = "id, at, actor, request_id, action, queue, detail"
LIST_SQL = (
    f"SELECT {COLUMNS} FROM audit_log WHERE id > :after AND at >= :since ORDER BY id LIMIT :n"
)
LIST_QUEUE_SQL = (
    f"SELECT {COLUMNS} FROM audit_log WHERE queue = :queue AND id > :after AND at >= :since "
    "ORDER BY id LIMIT :n"
)
# Retention: the oldest rows by time (idx_audit_at), then every row more than max_rows ids
# behind the newest (ids are never reused, so at most max_rows rows remain).
PRUNE_AGE_SQL = (
    "DELETE FROM audit_log WHERE id IN "
    "(SELECT id FROM audit_log WHERE at < :cutoff ORDER BY at LIMIT :n)"
)
PRUNE_COUNT_SQL = (
    "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE id <= "
    "(SELECT max(id) FROM audit_log) - :keep ORDER BY id LIMIT :n)"
)


def record(
    conn: sqlite3.Connection,
    now_ms: int,
    actor: Actor | None,
    action: str,
    queue: str = "",
    **detail: object,
) -> None:
    """Append one row inside the caller's transaction (``detail``: small JSON facts --
    counts, names, a config diff -- never a secret or a body)."""
    who = actor if actor is not None else EMBEDDED
    conn.execute(
        INSERT_SQL,
        (
            now_ms,
            who.who,
            who.request_id[:MAX_REQUEST_ID_CHARS],
            action,
            queue,
            json.dumps(detail, sort_keys=True, separators=(",", ":")),
        ),
    )


def list_entries(
    conn: sqlite3.Connection, after_id: int, limit: int, queue: str, since_ms: int
) -> list[AuditEntry]:
    """One page in id order (``after_id`` exclusive), at most ``limit`` rows."""
    params = {"after": after_id, "since": since_ms, "n": limit, "queue": queue}
    rows = conn.execute(LIST_QUEUE_SQL if queue else LIST_SQL, params).fetchall()
    return [AuditEntry(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows]


def check_list_args(after_id: object, limit: object, queue: object, since_ms: object) -> int:
    """Validate a ListAudit; returns the limit to use (0 = the default, 100)."""
    check_int("after_id", after_id, minimum=0)
    n = check_int("limit", limit, minimum=0)
    if n > MAX_LIST_LIMIT:
        raise errors.InvalidArgument(f"limit must be between 0 and {MAX_LIST_LIMIT}, got {n}")
    check_int("since_ms", since_ms, minimum=0)
    if not isinstance(queue, str):
        raise errors.InvalidArgument("queue must be a string")
    return n or DEFAULT_LIST_LIMIT


def prune_chunk(conn: sqlite3.Connection, now_ms: int, max_age_ms: int, max_rows: int) -> int:
    """One retention transaction's work: at most ``PRUNE_CHUNK_ROWS`` rows older than
    ``max_age_ms``, then (in what is left of the chunk) beyond the newest ``max_rows``.
    0 turns a bound off. Returns the rows deleted."""
    deleted = 0
    if max_age_ms > 0:
        cur = conn.execute(PRUNE_AGE_SQL, {"cutoff": now_ms - max_age_ms, "n": PRUNE_CHUNK_ROWS})
        deleted += max(cur.rowcount, 0)
    room = PRUNE_CHUNK_ROWS - deleted
    if max_rows > 0 and room > 0:
        cur = conn.execute(PRUNE_COUNT_SQL, {"keep": max_rows, "n": room})
        deleted += max(cur.rowcount, 0)
    return deleted


def queue_upserted(
    conn: sqlite3.Connection,
    now_ms: int,
    actor: Actor | None,
    before: QueueInfo | None,
    after: QueueInfo,
    fields: tuple[str, ...],
) -> None:
    """CreateQueue's row: a new queue, or a reconfiguration with ``diff`` =
    ``{field: [old, new]}`` for each config field that changed (empty: same config)."""
    if before is None:
        record(conn, now_ms, actor, "CreateQueue", after.name, created=True)
        return
    old, new = before.config, after.config
    diff = {
        f: [getattr(old, f), getattr(new, f)] for f in fields if getattr(old, f) != getattr(new, f)
    }
    record(conn, now_ms, actor, "CreateQueue", after.name, created=False, diff=diff)

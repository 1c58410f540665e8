"""Peek (browse without locking) and Stats (original-behaviour §5 Peek, Stats).

Every state has its own partial index on (queue, id), so Peek picks one statement per
state (a single state equality the planner matches) and the unfiltered Peek merges the
five index walks in id order; Stats counts each state on its index. Nothing here scans
``messages``; ``tests/engine/test_peek.py`` pins the plans.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from typing import Any

from mqlite import defaults
from mqlite.engine.budget import encoded_size
from mqlite.engine.remote import RemoteConnection, ResultTooLarge
from mqlite.engine.rows import MESSAGE_COLUMNS, row_to_message
from mqlite.errors import InvalidArgument, QueueNotFound
from mqlite.types import Message, State, Stats

_PAGE = "queue = :queue AND id >= :from_seq"

# Rows per statement of a Peek on a remote store (halved while the server refuses the
# result as too large): 64 small messages in one round trip, a page of 1 MiB bodies in
# statements of 4 under sqld's default 10 MiB response limit.
REMOTE_PEEK_ROWS = 64


# One statement per state: the single state equality lets the planner seek that state's
# partial index (queue, id) from ``from_seq`` and read rows already in id order.
def _select_state(state: str) -> str:
    return f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE state = '{state}' AND {_PAGE}"


_PAGE_END = "ORDER BY id LIMIT :max"


def _peek_state_sql(state: str) -> str:
    return f"\n{_select_state(state)}\n{_PAGE_END}\n"


PEEK_ACTIVE_SQL = _peek_state_sql("active")  # idx_msg_active
PEEK_LOCKED_SQL = _peek_state_sql("locked")  # idx_msg_locked_head
PEEK_DEFERRED_SQL = _peek_state_sql("deferred")  # idx_msg_deferred
PEEK_SCHEDULED_SQL = _peek_state_sql("scheduled")  # idx_msg_sched_head
PEEK_DEAD_LETTERED_SQL = _peek_state_sql("dead_lettered")  # idx_msg_dlq

# No state filter: there is no index on (queue, id) over all states, and a rowid range
# walk would read every other queue's rows too. A UNION ALL of the five per-state seeks
# plans as an ordered MERGE, so the page streams in id order from the five indexes.
PEEK_ALL_SQL = (
    "\n"
    + "\nUNION ALL\n".join(
        _select_state(s) for s in ("active", "locked", "deferred", "scheduled", "dead_lettered")
    )
    + f"\n{_PAGE_END}\n"
)

_PEEK_BY_STATE: dict[str, str] = {
    State.ACTIVE: PEEK_ACTIVE_SQL,
    State.LOCKED: PEEK_LOCKED_SQL,
    State.DEFERRED: PEEK_DEFERRED_SQL,
    State.SCHEDULED: PEEK_SCHEDULED_SQL,
    State.DEAD_LETTERED: PEEK_DEAD_LETTERED_SQL,
}

# Stats in one statement: the queue row (primary key; no row = unknown queue) plus one
# count per state on that state's partial index, and the oldest enqueue time over active
# and locked rows (enqueued_at is not indexed, so MIN reads those rows' records).
STATS_SQL = """
SELECT
    (SELECT COUNT(*) FROM messages WHERE queue = :queue AND state = 'active'),
    (SELECT COUNT(*) FROM messages WHERE queue = :queue AND state = 'locked'),
    (SELECT COUNT(*) FROM messages WHERE queue = :queue AND state = 'deferred'),
    (SELECT COUNT(*) FROM messages WHERE queue = :queue AND state = 'scheduled'),
    (SELECT COUNT(*) FROM messages WHERE queue = :queue AND state = 'dead_lettered'),
    (SELECT MIN(enqueued_at) FROM messages WHERE queue = :queue AND state = 'active'),
    (SELECT MIN(enqueued_at) FROM messages WHERE queue = :queue AND state = 'locked')
FROM queues WHERE name = :queue
"""


def peek(
    conn: sqlite3.Connection, queue: str, *, state: str | None, from_seq: int, max: int
) -> list[Message]:
    """Browse ``queue`` from ``from_seq`` (inclusive) in seq order without locking.

    ``state`` (None/"" = all) must be one of the five states. ``max`` <= 0 means 32 and is
    capped at 1000; the page also ends after the message whose encoded size brings the
    running total to ``RESPONSE_BYTE_BUDGET`` (that message included). Never returns a lock token.
    An unknown queue yields an empty page.
    """
    if state:
        sql = _PEEK_BY_STATE.get(state)
        if sql is None:
            allowed = ", ".join(s.value for s in State)
            raise InvalidArgument(f"unknown state {state!r}: expected one of {allowed}")
    else:
        sql = PEEK_ALL_SQL
    if max <= 0:
        max = defaults.PEEK_DEFAULT_MAX
    max = min(max, defaults.PEEK_MAX)
    page: list[Message] = []
    budget = 0
    params = {"queue": queue, "from_seq": from_seq, "max": max}
    for row in _rows(conn, sql, params):
        message = row_to_message(row, peek=True)
        page.append(message)
        budget += encoded_size(message)
        if budget >= defaults.RESPONSE_BYTE_BUDGET:
            break
    return page


def _rows(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> Iterator[tuple[Any, ...]]:
    """The page's rows, read lazily so a page of large bodies stops at the budget: one
    streamed cursor locally; on a remote store, which sends a statement's whole result at
    once and refuses one over its response limit, chunks of ``REMOTE_PEEK_ROWS`` rows that
    halve when the server refuses one (``ResultTooLarge``)."""
    if not isinstance(conn, RemoteConnection):
        with closing(conn.execute(sql, params)) as cursor:
            yield from cursor
        return
    chunk, left, start = REMOTE_PEEK_ROWS, int(params["max"]), int(params["from_seq"])
    while left > 0:
        want = min(chunk, left)
        try:
            rows = conn.execute(sql, {**params, "from_seq": start, "max": want}).fetchall()
        except ResultTooLarge:
            if chunk == 1:
                raise  # one row over the server's limit: nothing smaller to ask for
            chunk //= 2
            continue
        yield from rows
        if len(rows) < want:
            return
        left -= len(rows)
        start = int(rows[-1][0]) + 1  # MESSAGE_COLUMNS starts with id


def stats(conn: sqlite3.Connection, now_ms: int, queue: str) -> Stats:
    """Counts per state and the age of the oldest active or locked message."""
    row = conn.execute(STATS_SQL, {"queue": queue}).fetchone()
    if row is None:
        raise QueueNotFound(f"queue not found: {queue}")
    active, locked, deferred, scheduled, dead_lettered, oldest_active, oldest_locked = row
    oldest = [t for t in (oldest_active, oldest_locked) if t is not None]
    age = max(now_ms - min(oldest), 0) if oldest else 0
    return Stats(
        queue=queue,
        active=active,
        locked=locked,
        deferred=deferred,
        scheduled=scheduled,
        dead_lettered=dead_lettered,
        total=active + locked + deferred + scheduled + dead_lettered,
        oldest_message_age_ms=age,
    )

"""The claim loop on a remote store: many claims per round trip (``claim.claim_batch`` is
the loop on a local file, one statement per message, each answered in microseconds).

Over the network each statement would be a round trip, so the claims of a batch go in
chunks (sized below) in ONE request each (``RemoteConnection.execute_each``), every claim
with its own fresh token. The outcome is the loop's, claim for claim:

- the claims run in order on the server, each after the one before it, in the caller's
  transaction, so they pick exactly the rows the loop would (one ``now``; a peek-lock
  claim's head still blocks its group's next message for the claims after it);
- receive-and-delete deletes each claimed row right after its claim (by its token, in the
  same request), so, as in the loop, the group's next message may follow;
- the first claim that finds nothing ends the batch (the claims after it in the chunk
  found nothing either: nothing changed in between);
- the byte budget: a chunk is claimed inside a savepoint; if the budget is crossed before
  its end, the chunk is rolled back and claimed again by the loop (exactly the loop's
  messages; rare: a chunk of messages over ``RESPONSE_BYTE_BUDGET``);
- the server's response limit (sqld's ``--max-response-size``): a chunk whose answer is
  over it is undone and claimed one by one, and the queue's chunks are capped at half
  that size on this connection from then on (halving again if still too large), so a
  queue of large bodies pays the undone chunk once, not on every Receive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mqlite import defaults
from mqlite.engine.budget import encoded_size
from mqlite.engine.remote import RemoteConnection, ResultTooLarge
from mqlite.types import Message

# Claims per request. sqld reads every statement of a batch, the steps it skips too (a
# claim costs it ~0.15 ms even unrun), so a request carries about as many claims as are
# likely to find a message: twice what the queue's last receive on this connection took
# (a drain takes all it asks for at once), at least FIRST_CHUNK, doubling while chunks come
# back full, never more than MAX_CHUNK. A drain of 64 is one request once it runs, four
# (8, 16, 32, 8) the first time; a poll that finds one message sends 8.
FIRST_CHUNK = 8
MAX_CHUNK = 64
MAX_HINTS = 4096  # queues remembered per connection

# Receive-and-delete by the claim's token (its id is in the answer, not known when the
# request is built); idx_msg_locked_head bounds the search to the queue's locked rows.
DELETE_BY_TOKEN_SQL = (
    "DELETE FROM messages WHERE queue = :queue AND state = 'locked' AND lock_token = :token"
)


def claim_batch(
    conn: RemoteConnection,
    sql: str,
    params: dict[str, Any],
    max_messages: int,
    *,
    delete: bool,
    new_token: Callable[[], str],
    build: Callable[[tuple[Any, ...], str], Message],
    one_by_one: Callable[[int], list[Message]],
) -> list[Message]:
    """``claim.claim_batch`` in chunks (module doc); ``build(row, token)`` makes the
    message of a row claimed with ``token`` (bound; the receive-and-delete view when
    ``delete``); ``one_by_one(n)`` is the loop, for a chunk that crossed the byte budget."""
    out: list[Message] = []
    budget = 0
    hints, limits = conn.claim_hints, conn.claim_limits
    queue = str(params["queue"])
    n = max(FIRST_CHUNK, 2 * hints.get(queue, 0))
    limit = limits.get(queue, MAX_CHUNK)
    while len(out) < max_messages:
        n = min(n, limit, max_messages - len(out))
        conn.execute("SAVEPOINT sp_claims")  # queued: it travels with the claims
        try:
            tokens = [new_token() for _ in range(n)]
            rows = _claims(conn, sql, params, tokens, delete)
        except ResultTooLarge:
            # The chunk's rows together are over sqld's response limit (large bodies): the
            # claims ran on the server, their answer did not come back. Undo the chunk;
            # the loop claims one row per answer (a later Receive takes the rest), and the
            # queue's later receives ask for half as many per request (halving again
            # until an answer fits) instead of undoing a full chunk every time.
            _undo_chunk(conn)
            _remember(limits, queue, max(1, n // 2))
            return out if out else one_by_one(max_messages)
        got: list[Message] = []
        for row, token in zip(rows, tokens, strict=True):
            if row is None:
                break
            msg = build(row, token)
            got.append(msg)
            budget += encoded_size(msg)
            if budget >= defaults.RESPONSE_BYTE_BUDGET:
                break
        if budget >= defaults.RESPONSE_BYTE_BUDGET and len(got) < len(rows) and rows[len(got)]:
            # More were claimed than the loop would have: undo the chunk, claim one by one.
            _undo_chunk(conn)
            return out + one_by_one(len(got))
        conn.execute("RELEASE sp_claims")  # queued: it travels with the COMMIT
        out += got
        if len(got) < n or budget >= defaults.RESPONSE_BYTE_BUDGET:
            break
        n *= 2
    _remember(hints, queue, len(out))
    return out


def _remember(per_queue: dict[str, int], queue: str, value: int) -> None:
    if len(per_queue) >= MAX_HINTS and queue not in per_queue:
        per_queue.clear()  # bounded: a broker with very many queues starts them afresh
    per_queue[queue] = value


def _undo_chunk(conn: RemoteConnection) -> None:
    """Roll the chunk's claims back (both ways out of a chunk the loop must redo)."""
    conn.execute("ROLLBACK TO sp_claims")
    conn.execute("RELEASE sp_claims")


def _claims(
    conn: RemoteConnection, sql: str, params: dict[str, Any], tokens: list[str], delete: bool
) -> list[tuple[Any, ...] | None]:
    """One request: a claim per token (each followed by its delete); each claim's row
    or None."""
    statements: list[tuple[str, dict[str, Any]]] = []
    for token in tokens:
        bound = {**params, "token": token}
        statements.append((sql, bound))
        if delete:
            statements.append((DELETE_BY_TOKEN_SQL, bound))
    cursors = conn.execute_each(statements, stop_unless_changed=True)
    claims = cursors[:: 2 if delete else 1]
    return [None if c is None else c.fetchone() for c in claims]

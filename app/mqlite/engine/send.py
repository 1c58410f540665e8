"""Send, schedule and cancel: the producer side, inside one transaction per call.

A send resolves its name to routes (one plain queue, or a topic's subscriptions), then for
each message and route applies, in order: the route's filter, the group_fifo rule, TTL,
dedup, and the insert. Any ``GroupRequired`` aborts the whole call (the caller's
transaction rolls back), so a batch never half-commits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mqlite import errors
from mqlite.engine import dedup
from mqlite.engine.rows import encode_properties
from mqlite.filters import FilterInput
from mqlite.types import OrderingMode, OutMessage, QueueInfo

# Filter hook: route this copy? Evaluated against the message environment (fail closed).
Accepts = Callable[[FilterInput], bool]

INSERT_MESSAGE_SQL = """
INSERT INTO messages (queue, state, visible_at, enqueued_at, expires_at, message_id,
                      correlation_id, reply_to, group_id, content_type, subject, properties, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

# Only a never-delivered scheduled row is cancellable: a backoff-parked redelivery
# (delivery_count >= 1) must come back, not vanish.
CANCEL_SQL = """
DELETE FROM messages
 WHERE id = ? AND queue = ? AND state = 'scheduled' AND delivery_count = 0
"""


_STRING_FIELDS = ("message_id", "group_id", "subject", "correlation_id", "reply_to", "content_type")


@dataclass(frozen=True, slots=True)
class Route:
    queue: QueueInfo
    accepts: Accepts | None = None


@dataclass(frozen=True, slots=True)
class SendResult:
    seq_numbers: list[int]
    notify: set[str]


def validate_messages(messages: object, max_message_bytes: int) -> list[OutMessage]:
    """Check every message before anything is written (a bad one fails the whole call)."""
    if isinstance(messages, OutMessage) or not isinstance(messages, Sequence):
        raise errors.InvalidArgument("messages must be a list of OutMessage")
    out: list[OutMessage] = []
    for i, m in enumerate(messages):
        if not isinstance(m, OutMessage):
            raise errors.InvalidArgument(f"messages[{i}] must be an OutMessage")
        body = m.body
        if not isinstance(body, bytes | bytearray | memoryview):
            raise errors.InvalidArgument(f"messages[{i}].body must be bytes")
        if len(body) > max_message_bytes:
            raise errors.MessageTooLarge(
                f"messages[{i}].body is {len(body)} bytes, over the {max_message_bytes}-byte cap"
            )
        for name in _STRING_FIELDS:
            if type(getattr(m, name)) is not str:
                raise errors.InvalidArgument(f"messages[{i}].{name} must be a string")
        props = m.properties
        if props is None:
            props = {}
        if not isinstance(props, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in props.items()
        ):
            raise errors.InvalidArgument(f"messages[{i}].properties must map strings to strings")
        if not isinstance(body, bytes) or props is not m.properties:
            m = OutMessage(
                body=bytes(body),
                message_id=m.message_id,
                group_id=m.group_id,
                subject=m.subject,
                correlation_id=m.correlation_id,
                reply_to=m.reply_to,
                content_type=m.content_type,
                properties=props,
            )
        out.append(m)
    return out


def effective_ttl_ms(request_ttl_ms: int | None, queue_default_ttl_ms: int) -> int:
    """The request TTL, capped by the queue default (the queue's TTL is a ceiling)."""
    ttl = request_ttl_ms or 0
    if ttl <= 0:
        return queue_default_ttl_ms
    if queue_default_ttl_ms > 0:
        return min(ttl, queue_default_ttl_ms)
    return ttl


def insert(
    conn: sqlite3.Connection,
    now_ms: int,
    routes: Sequence[Route],
    messages: Sequence[OutMessage],
    *,
    visible_at_ms: int,
    ttl_ms: int | None,
    single: bool,
) -> SendResult:
    """Insert every message into every accepting route; return positional seq numbers.

    For a topic the seq is the last accepting route's (0 when no filter matched). A dedup
    conflict is seq 0 in a batch; a single send raises ``DedupConflict`` instead.
    """
    scheduled = visible_at_ms > now_ms
    state = "scheduled" if scheduled else "active"
    notify: set[str] = set()
    seqs: list[int] = []
    execute = conn.execute
    for m in messages:
        final_seq = 0
        conflicted = False
        props = encode_properties(m.properties)
        env: FilterInput | None = None
        for route in routes:
            q = route.queue
            cfg = q.config
            if route.accepts is not None:
                if env is None:
                    env = filter_input(m, now_ms, visible_at_ms)
                if not route.accepts(env):
                    continue
            if not m.group_id and cfg.ordering_mode == OrderingMode.GROUP_FIFO:
                raise errors.GroupRequired(
                    f"queue {q.name!r} is group_fifo: every message needs a group_id"
                )
            digest = ""
            if cfg.dedup_window_ms > 0:
                digest = dedup.body_hash(m.body)
                hit = dedup.check(conn, now_ms, q.name, cfg.dedup_window_ms, m.message_id, digest)
                if hit is not None:
                    kind, seq = hit
                    if kind == dedup.CONFLICT:
                        conflicted = True
                    else:
                        final_seq = seq
                    continue
            ttl = effective_ttl_ms(ttl_ms, cfg.default_ttl_ms)
            cur = execute(
                INSERT_MESSAGE_SQL,
                (
                    q.name,
                    state,
                    visible_at_ms,
                    now_ms,
                    visible_at_ms + ttl if ttl > 0 else 0,
                    m.message_id or None,
                    m.correlation_id or None,
                    m.reply_to or None,
                    m.group_id or None,
                    m.content_type or None,
                    m.subject or None,
                    props,
                    m.body,
                ),
            )
            seq = int(cur.lastrowid or 0)
            if digest:
                dedup.record(conn, now_ms, q.name, m.message_id, digest, seq)
            if not scheduled:
                notify.add(q.name)
            final_seq = seq
        if single and final_seq == 0 and conflicted:
            raise errors.DedupConflict(
                "a message with this message_id and a different body is in the dedup window"
            )
        seqs.append(final_seq)
    return SendResult(seqs, notify)


def filter_input(m: OutMessage, enqueued_at_ms: int, visible_at_ms: int) -> FilterInput:
    """The message as a filter sees it at publish (built once per message, not per route)."""
    return FilterInput(
        subject=m.subject,
        group_id=m.group_id,
        correlation_id=m.correlation_id,
        reply_to=m.reply_to,
        message_id=m.message_id,
        content_type=m.content_type,
        properties=m.properties,
        body=m.body,
        enqueued_at_ms=enqueued_at_ms,
        visible_at_ms=visible_at_ms,
    )


def cancel(conn: sqlite3.Connection, queue: str, seq_number: int) -> None:
    if conn.execute(CANCEL_SQL, (seq_number, queue)).rowcount == 0:
        raise errors.NotFound(
            f"no cancellable scheduled message {seq_number} in {queue!r} "
            "(only never-delivered scheduled messages can be cancelled)"
        )

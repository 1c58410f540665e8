"""Send, schedule and cancel: the producer side, inside one transaction per call.

A send resolves its name to routes (one plain queue, or a topic's subscriptions), then for
each message and route applies, in order: the route's filter, the group_fifo rule, TTL,
dedup, and the insert. Any ``GroupRequired`` aborts the whole call (the caller's
transaction rolls back), so a batch never half-commits.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mqlite import defaults, errors
from mqlite.engine import dedup
from mqlite.engine.remote import RemoteConnection, RemoteCursor, pipelined
from mqlite.engine.rows import EXTERNAL_BODY_MIN_BYTES, encode_properties
from mqlite.filters import FilterInput
from mqlite.filters import runtime as filter_runtime
from mqlite.types import OrderingMode, OutMessage, QueueInfo

# Filter hook: route this copy? Evaluated against the message environment (fail closed).
Accepts = Callable[[FilterInput], bool]

INSERT_MESSAGE_SQL = """
INSERT INTO messages (queue, state, visible_at, enqueued_at, expires_at, message_id,
                      correlation_id, reply_to, group_id, content_type, subject, properties, body,
                      external_body_bytes)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

# The same row for a message with no ids, subject, content type or properties (the common
# case): NULLs written in the statement, not bound. sqlite3 binds None through its adapter
# lookup (a failed protocol search per parameter), nine of them cost a send_one ~20 % of
# its instructions (issue 29).
INSERT_PLAIN_SQL = """
INSERT INTO messages (queue, state, visible_at, enqueued_at, expires_at, message_id,
                      correlation_id, reply_to, group_id, content_type, subject, properties, body,
                      external_body_bytes)
VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ?, ?)
"""

# A large body goes to its own table under the message's id (rows.split_body).
INSERT_BODY_SQL = "INSERT INTO bodies (id, body) VALUES (?, ?)"

LAST_ROWID_SQL = "SELECT last_insert_rowid()"

# Only a never-delivered scheduled row is cancellable: a backoff-parked redelivery
# (delivery_count >= 1) must come back, not vanish.
CANCEL_SQL = """
DELETE FROM messages
 WHERE id = ? AND queue = ? AND state = 'scheduled' AND delivery_count = 0
"""


# Fields of at most this many UTF-8 bytes (4 per character) are within every limit.
_UNMEASURED_FIELD_BYTES = min(defaults.MAX_FIELD_BYTES, defaults.MAX_METADATA_BYTES)

_EMPTY = ""  # compared by identity: CPython has one empty str object

_STRING_FIELDS = ("message_id", "group_id", "subject", "correlation_id", "reply_to", "content_type")


@dataclass(frozen=True, slots=True)
class Route:
    queue: QueueInfo
    accepts: Accepts | None = None


class SendResult:
    """Plain dicts, not Counters: built on every send (hot path), and a Counter costs two
    Python calls to make and one per first increment. A plain class: a dataclass's
    ``__init__`` would call ``dict()`` for each empty default, and a frozen one
    ``object.__setattr__`` per field."""

    __slots__ = ("conflicts", "copies", "deduplicated", "notify", "seq_numbers")

    def __init__(
        self, seq_numbers: list[int], notify: dict[str, int], copies: dict[str, int]
    ) -> None:
        self.seq_numbers = seq_numbers
        self.notify = notify  # claimable copies per queue: that many parked polls are woken
        # Message effects (observe.py): inserted copies, and dedup hits by kind, per queue.
        self.copies = copies
        self.deduplicated: dict[str, int] = {}
        self.conflicts: dict[str, int] = {}


def validate_messages(messages: object, max_message_bytes: int) -> list[OutMessage]:
    """Check every message before anything is written (a bad one fails the whole call).

    The common case (bytes body, str fields, no or str->str properties) passes through
    untouched; only a bytearray/memoryview body or ``properties=None`` is normalised.
    """
    # type() first: the ABC check costs more than the rest of a one-message validation.
    if type(messages) is not list and (
        isinstance(messages, OutMessage) or not isinstance(messages, Sequence)
    ):
        raise errors.InvalidArgument("messages must be a list of OutMessage")
    if len(messages) > defaults.MAX_SEND_MESSAGES:
        raise errors.InvalidArgument(
            f"{len(messages)} messages in one call; at most {defaults.MAX_SEND_MESSAGES} "
            "(split the batch)"
        )
    out: list[OutMessage] = []
    for i, m in enumerate(messages):
        if type(m) is not OutMessage:
            raise errors.InvalidArgument(f"messages[{i}] must be an OutMessage")
        body = m.body
        if type(body) is not bytes and not isinstance(body, bytes | bytearray | memoryview):
            raise errors.InvalidArgument(f"messages[{i}].body must be bytes")
        if len(body) > max_message_bytes:
            raise errors.MessageTooLarge(
                f"messages[{i}].body is {len(body)} bytes, over the {max_message_bytes}-byte cap "
                "(MQLITE_MAX_MESSAGE_BYTES on a broker, max_message_bytes embedded)"
            )
        props = m.properties
        if (
            m.message_id is _EMPTY
            and m.group_id is _EMPTY
            and m.subject is _EMPTY
            and m.correlation_id is _EMPTY
            and m.reply_to is _EMPTY
            and m.content_type is _EMPTY
            and type(props) is dict
            and not props
        ):
            # No metadata (the common message): nothing to type-check or measure. (An
            # empty string that is not CPython's one "" object takes the checks below.)
            out.append(m if type(body) is bytes else dataclasses.replace(m, body=bytes(body)))
            continue
        if not (
            type(m.message_id) is str
            and type(m.group_id) is str
            and type(m.subject) is str
            and type(m.correlation_id) is str
            and type(m.reply_to) is str
            and type(m.content_type) is str
        ):
            bad = next(f for f in _STRING_FIELDS if type(getattr(m, f)) is not str)
            raise errors.InvalidArgument(f"messages[{i}].{bad} must be a string")
        if props is None:
            props = {}
        elif type(props) is not dict or (
            props and not all(type(k) is str and type(v) is str for k, v in props.items())
        ):
            raise errors.InvalidArgument(f"messages[{i}].properties must map strings to strings")
        # Hot path: without properties, fields of 1,024 characters in all are under every
        # byte limit (a character is at most 4 UTF-8 bytes): no per-field measuring.
        if (
            props
            or 4
            * (
                len(m.message_id)
                + len(m.group_id)
                + len(m.subject)
                + len(m.correlation_id)
                + len(m.reply_to)
                + len(m.content_type)
            )
            > _UNMEASURED_FIELD_BYTES
        ):
            check_metadata(i, m, props)
        if type(body) is not bytes or props is not m.properties:
            m = dataclasses.replace(m, body=bytes(body), properties=props)
        out.append(m)
    return out


def _utf8_len(text: str) -> int:
    """UTF-8 size without encoding when the character count already settles it."""
    n = len(text)
    return n if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def check_metadata(i: int, m: OutMessage, props: dict[str, str]) -> None:
    """Bound every stored string: each field, the property count, and their total size
    (a deviation from the original, which stored any length; docs/http.md "Limits")."""
    total = 0
    for name in _STRING_FIELDS:
        size = _utf8_len(getattr(m, name))
        if size > defaults.MAX_FIELD_BYTES:
            raise errors.InvalidArgument(
                f"messages[{i}].{name} is {size} bytes; at most {defaults.MAX_FIELD_BYTES}"
            )
        total += size
    if props:
        if len(props) > defaults.MAX_PROPERTIES:
            raise errors.InvalidArgument(
                f"messages[{i}].properties has {len(props)} entries; "
                f"at most {defaults.MAX_PROPERTIES}"
            )
        for key, value in props.items():
            total += _utf8_len(key) + _utf8_len(value)
    if total > defaults.MAX_METADATA_BYTES:
        raise errors.InvalidArgument(
            f"messages[{i}] carries {total} bytes of metadata (ids, subject, properties); "
            f"at most {defaults.MAX_METADATA_BYTES}"
        )


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
    visible_at_ms: int,
    ttl_ms: int | None,
    plan: list[list[Route]] | None = None,
) -> SendResult:
    """Insert every message into every accepting route; return positional seq numbers.

    ``plan`` (from ``route_plan``) lists, per message, the routes whose filter accepted it;
    None means every route takes every message (no filters). For a topic the seq is the
    last accepting route's (0 when no filter matched). A dedup conflict is seq 0 in a
    batch; a single send raises ``DedupConflict`` instead.
    """
    scheduled = visible_at_ms > now_ms
    state = "scheduled" if scheduled else "active"
    if len(routes) == 1 and plan is None and routes[0].queue.config.dedup_window_ms <= 0:
        q = routes[0].queue  # one plain queue, no dedup: the common send
        if len(messages) > 1 or type(conn) is not sqlite3.Connection:
            # (remote: a single send too, so that it rides with the COMMIT)
            batch = _insert_many(conn, now_ms, q, messages, visible_at_ms, ttl_ms, state)
        else:
            m = messages[0]
            if not m.group_id and q.config.ordering_mode == OrderingMode.GROUP_FIFO:
                raise errors.GroupRequired(
                    f"queue {q.name!r} is group_fifo: every message needs a group_id"
                )
            props = encode_properties(m.properties) if m.properties else None
            batch = [_insert_row(conn, now_ms, q, m, props, state, visible_at_ms, ttl_ms)]
        inserted = {q.name: len(batch)}
        return SendResult(batch, {} if scheduled else inserted, inserted)
    notify: dict[str, int] = {}
    copies: dict[str, int] = {}
    result = SendResult([], notify, copies)
    for i, m in enumerate(messages):
        final_seq = 0
        conflicted = False
        props = encode_properties(m.properties) if m.properties else None
        for route in routes if plan is None else plan[i]:
            q = route.queue
            cfg = q.config
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
                        result.conflicts[q.name] = result.conflicts.get(q.name, 0) + 1
                    else:
                        final_seq = seq
                        result.deduplicated[q.name] = result.deduplicated.get(q.name, 0) + 1
                    continue
            seq = _insert_row(conn, now_ms, q, m, props, state, visible_at_ms, ttl_ms)
            if digest:
                dedup.record(conn, now_ms, q.name, m.message_id, digest, seq)
            if not scheduled:
                notify[q.name] = notify.get(q.name, 0) + 1
            copies[q.name] = copies.get(q.name, 0) + 1
            final_seq = seq
        if final_seq == 0 and conflicted and len(messages) == 1:
            raise errors.DedupConflict(
                "a message with this message_id and a different body is in the dedup window"
            )
        result.seq_numbers.append(final_seq)
    return result


def _insert_row(
    conn: sqlite3.Connection,
    now_ms: int,
    q: QueueInfo,
    m: OutMessage,
    props: str | None,
    state: str,
    visible_at_ms: int,
    ttl_ms: int | None,
) -> int:
    """One copy of ``m`` into ``q`` (its body in ``bodies`` when large); its seq.
    ``props``: ``m.properties`` encoded (once per message, not per route)."""
    cfg = q.config
    # effective_ttl_ms and split_body, inlined for the common case (hot path).
    ttl = effective_ttl_ms(ttl_ms, cfg.default_ttl_ms) if ttl_ms or cfg.default_ttl_ms else 0
    body = m.body
    if len(body) > EXTERNAL_BODY_MIN_BYTES:
        inline, external = b"", len(body)
    else:
        inline, external = body, 0
    if not (  # plain(m) inlined: no metadata to bind (INSERT_PLAIN_SQL)
        m.message_id
        or m.correlation_id
        or m.reply_to
        or m.group_id
        or m.content_type
        or m.subject
        or props
    ):
        cur = conn.execute(
            INSERT_PLAIN_SQL,
            (q.name, state, visible_at_ms, now_ms, visible_at_ms + ttl if ttl > 0 else 0,
             inline, external),
        )  # fmt: skip
    else:
        cur = conn.execute(
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
                inline,
                external,
            ),
        )
    seq = int(cur.lastrowid or 0)
    if external:
        conn.execute(INSERT_BODY_SQL, (seq, body))
    return seq


def _insert_many(
    conn: sqlite3.Connection,
    now_ms: int,
    queue: QueueInfo,
    messages: Sequence[OutMessage],
    visible_at_ms: int,
    ttl_ms: int | None,
    state: str,
) -> list[int]:
    """A batch to one plain queue without dedup: one ``executemany``.

    AUTOINCREMENT gives consecutive ids to consecutive inserts of the one writer, so the
    batch's seqs are the ``len(messages)`` ids ending at ``last_insert_rowid()``.
    """
    if queue.config.ordering_mode == OrderingMode.GROUP_FIFO and not all(
        m.group_id for m in messages
    ):
        raise errors.GroupRequired(
            f"queue {queue.name!r} is group_fifo: every message needs a group_id"
        )
    ttl = effective_ttl_ms(ttl_ms, queue.config.default_ttl_ms)
    expires = visible_at_ms + ttl if ttl > 0 else 0
    name = queue.name
    # split_body and encode_properties inlined: no Python call per message (hot path).
    if not any(  # (see INSERT_PLAIN_SQL; no metadata: no call per message)
        m.message_id
        or m.correlation_id
        or m.reply_to
        or m.group_id
        or m.content_type
        or m.subject
        or m.properties
        for m in messages
    ):
        rows: list[tuple[object, ...]] = [
            (name, state, visible_at_ms, now_ms, expires,
             *((m.body, 0) if len(m.body) <= EXTERNAL_BODY_MIN_BYTES else (b"", len(m.body))))
            for m in messages
        ]  # fmt: skip
        sql, ext_col = INSERT_PLAIN_SQL, 6
    else:
        rows = [
            (
                name,
                state,
                visible_at_ms,
                now_ms,
                expires,
                m.message_id or None,
                m.correlation_id or None,
                m.reply_to or None,
                m.group_id or None,
                m.content_type or None,
                m.subject or None,
                encode_properties(m.properties) if m.properties else None,
                *((m.body, 0) if len(m.body) <= EXTERNAL_BODY_MIN_BYTES else (b"", len(m.body))),
            )
            for m in messages
        ]
        sql, ext_col = INSERT_MESSAGE_SQL, 13
    if pipelined(conn) and not any(row[ext_col] for row in rows):
        return _insert_deferred(conn, sql, rows)
    conn.executemany(sql, rows)
    last = int(conn.execute(LAST_ROWID_SQL).fetchone()[0])
    seqs = list(range(last - len(messages) + 1, last + 1))
    large = [
        (seq, m.body) for seq, m, row in zip(seqs, messages, rows, strict=True) if row[ext_col]
    ]
    if large:
        conn.executemany(INSERT_BODY_SQL, large)
    return seqs


def _insert_deferred(
    conn: RemoteConnection, sql: str, rows: Sequence[Sequence[object]]
) -> list[int]:
    """On a remote store the rows travel with the transaction's next request -- for a
    send, its COMMIT: one round trip (remote_pipeline.py); the seqs (consecutive, as in
    ``_insert_many``) are filled in when the server answered, before the call returns."""
    seqs = [0] * len(rows)

    def fill(cur: RemoteCursor) -> None:
        last = int(cur.lastrowid or 0)
        seqs[:] = range(last - len(rows) + 1, last + 1)

    conn.defer_many(sql, rows, fill)
    return seqs


def check_fanout(messages: int, routes: int) -> None:
    """One publish writes at most MAX_FANOUT_ROWS copies (messages x subscriptions)."""
    if messages * routes > defaults.MAX_FANOUT_ROWS:
        raise errors.InvalidArgument(
            f"{messages} messages x {routes} subscriptions = {messages * routes} copies in "
            f"one call; at most {defaults.MAX_FANOUT_ROWS} (send fewer messages per call)"
        )


def route_plan(
    routes: Sequence[Route], messages: Sequence[OutMessage], now_ms: int, visible_at_ms: int
) -> list[list[Route]] | None:
    """Evaluate every subscription filter: per message, the routes that accept it. None
    when no route has a filter. Pure CPU on a budget (filters fail closed), run BEFORE the
    write transaction so a costly filter never holds the writer."""
    for r in routes:  # a loop, not all(<genexpr>): this runs on every send
        if r.accepts is not None:
            break
    else:
        return None
    plan: list[list[Route]] = []
    deadline = filter_runtime.elapsed_clock() + defaults.FILTER_PUBLISH_BUDGET_MS / 1000
    for m in messages:
        env = filter_input(m, now_ms, visible_at_ms)
        plan.append([r for r in routes if r.accepts is None or r.accepts(env)])
        if filter_runtime.elapsed_clock() > deadline:
            raise errors.InvalidArgument(
                f"subscription filters need over {defaults.FILTER_PUBLISH_BUDGET_MS} ms for "
                "this publish; send fewer messages per call (nothing was sent)"
            )
    return plan


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

"""Mapping between ``messages`` rows and ``Message`` values.

Empty strings are stored as NULL and properties as a JSON object (NULL when empty), so a
row read back gives exactly the message that was sent.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from mqlite.engine.frozen import constructor
from mqlite.types import Message, Settler

# The body as stored: inline, or (external_body_bytes > 0) in `bodies`. A primary-key
# probe, evaluated only for external rows (CASE short-circuits).
BODY_EXPR = (
    "CASE WHEN external_body_bytes = 0 THEN body "
    "ELSE (SELECT b.body FROM bodies b WHERE b.id = messages.id) END"
)

# The columns every message-returning statement selects, in this order.
MESSAGE_COLUMNS = (
    "id, queue, state, visible_at, locked_until, lock_token, delivery_count, enqueued_at, "
    "expires_at, message_id, correlation_id, reply_to, group_id, content_type, subject, "
    f"properties, {BODY_EXPR}, dead_letter_reason, dead_letter_description, last_error, "
    "last_error_at"
)

# A body larger than this is stored in `bodies` (external): a claim's row rewrite then
# costs a page, not the body. Smaller ones stay inline: their page is written anyway.
EXTERNAL_BODY_MIN_BYTES = 1024


def split_body(body: bytes) -> tuple[bytes, int]:
    """(what the messages row stores, external_body_bytes) for a body."""
    n = len(body)
    return (b"", n) if n > EXTERNAL_BODY_MIN_BYTES else (body, 0)


def encode_properties(properties: dict[str, str] | None) -> str | None:
    if not properties:
        return None
    return json.dumps(properties, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def decode_properties(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    value: dict[str, str] = json.loads(text)
    return value


# A Message built without its frozen __init__ (frozen.py): ~36,000 fewer instructions per
# received message. Positional, in Message's field order (a change of that order fails
# at the first call: frozen.py checks the layout).
make_message = constructor(Message)


def row_to_message(row: sqlite3.Row | tuple[Any, ...], *, peek: bool = False) -> Message:
    """Build a ``Message`` from a row selected with ``MESSAGE_COLUMNS``.

    ``peek=True`` fills the peek-only fields (state, visible/expires, DL reason) and never
    the lock token; otherwise the receive view (token + lease, no state).
    """
    (
        seq,
        queue,
        state,
        visible_at,
        locked_until,
        lock_token,
        delivery_count,
        enqueued_at,
        expires_at,
        message_id,
        correlation_id,
        reply_to,
        group_id,
        content_type,
        subject,
        properties,
        body,
        dl_reason,
        dl_description,
        last_error,
        last_error_at,
    ) = row
    return make_message(
        seq,  # seq_number
        queue,
        bytes(body),
        message_id or "",
        group_id or "",
        subject or "",
        correlation_id or "",
        reply_to or "",
        content_type or "",
        json.loads(properties) if properties else {},  # (decode_properties)
        delivery_count,
        enqueued_at,  # enqueued_at_ms
        locked_until,  # locked_until_ms
        "" if peek else (lock_token or ""),  # lock_token: a receive's only
        state if peek else "",  # state, visible_at_ms, expires_at_ms, dead-letter: peek's
        visible_at if peek else 0,
        expires_at if peek else 0,
        (dl_reason or "") if peek else "",
        (dl_description or "") if peek else "",
        last_error or "",
        last_error_at,  # last_error_at_ms
        None,  # _settler (bound by the client)
    )


# What a claim (claim.py) RETURNs: the receive view's columns but for those the claim
# sets to its own parameters (queue, lock token, lease), which the loop already holds.
# Every column returned costs ~2,000 CPU instructions per claimed message (the five
# peek-only ones and those three: ~17,000 of a drain's ~220,000; issue 29).
CLAIM_COLUMNS = (
    "id, delivery_count, enqueued_at, message_id, correlation_id, reply_to, group_id, "
    f"content_type, subject, properties, {BODY_EXPR}, last_error, last_error_at"
)

# The metadata columns of a CLAIM_COLUMNS row (message_id .. properties): all NULL (or
# empty) for a message sent without metadata, every drain's (claim.py's byte budget).
CLAIM_METADATA = slice(3, 10)

_new = object.__new__
_PARTS: Any = make_message  # the parts class: instances take plain stores (frozen.py)


def claimed_message(
    row: tuple[Any, ...], queue: str, lock_token: str, locked_until: int, settler: Settler
) -> Message:
    """The receive view of a claimed row (``CLAIM_COLUMNS``) with the claim's own queue,
    token and lease (token "" and lease 0: receive-and-delete's), bound to ``settler``:
    ``row_to_message``'s message, built without a constructor call (frozen.py: every
    field stored, then the class set; the claim loop builds every received message here)."""
    m = _new(_PARTS)
    (
        m.seq_number,
        m.delivery_count,
        m.enqueued_at_ms,
        message_id,
        correlation_id,
        reply_to,
        group_id,
        content_type,
        subject,
        properties,
        body,
        last_error,
        m.last_error_at_ms,
    ) = row
    m.queue = queue
    m.body = bytes(body)
    m.message_id = message_id or ""
    m.group_id = group_id or ""
    m.subject = subject or ""
    m.correlation_id = correlation_id or ""
    m.reply_to = reply_to or ""
    m.content_type = content_type or ""
    m.properties = json.loads(properties) if properties else {}  # (decode_properties)
    m.locked_until_ms = locked_until
    m.lock_token = lock_token
    m.state = ""  # state, visible_at_ms, expires_at_ms, dead-letter: peek's
    m.visible_at_ms = 0
    m.expires_at_ms = 0
    m.dead_letter_reason = ""
    m.dead_letter_description = ""
    m.last_error = last_error or ""
    m._settler = settler
    m.__class__ = Message
    return m  # type: ignore[no-any-return]

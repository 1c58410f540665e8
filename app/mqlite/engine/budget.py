"""What one message adds to a Receive/Peek response: the response byte budget's unit.

``RESPONSE_BYTE_BUDGET`` bounds the *encoded* response, so every field is charged as
the wire writes it: the body as base64 (4 bytes per 3), each string at its JSON length
(an upper bound: escapes included), each key and number at a fixed allowance. Charging
bodies alone let 24 messages with 30 MiB subjects build a 720 MiB Peek answer, and a
page of 1 MiB bodies exceed the budget by a third (their base64).
"""

from __future__ import annotations

from mqlite.types import Message

# Keys, quotes, separators and the integer fields of one encoded message (all present).
MESSAGE_OVERHEAD_BYTES = 512
PROPERTY_OVERHEAD_BYTES = 6  # "k":"v", around a property's key and value


def json_len(text: str) -> int:
    """Bytes of ``text`` as a JSON string's contents, never an underestimate: printable
    ASCII is one byte (two for ``"`` and ``\\``); anything else is charged at the widest
    escape (``\\u00XX``, 6 bytes per character)."""
    if text.isascii() and text.isprintable():
        return len(text) + text.count('"') + text.count("\\")
    return 6 * len(text)


def encoded_size(m: Message) -> int:
    """An upper bound of ``m``'s bytes in a response (see the module docstring)."""
    size = MESSAGE_OVERHEAD_BYTES + (len(m.body) + 2) // 3 * 4
    token = m.lock_token
    if not (  # a claimed message without metadata (every drain's: hot path)
        m.message_id
        or m.group_id
        or m.subject
        or m.correlation_id
        or m.reply_to
        or m.content_type
        or m.state
        or m.dead_letter_reason
        or m.dead_letter_description
        or m.properties
    ):
        if token.isascii() and token.isprintable():  # (json_len inlined)
            return size + len(token) + token.count('"') + token.count("\\")
        return size + 6 * len(token)
    for text in (
        m.message_id,
        m.group_id,
        m.subject,
        m.correlation_id,
        m.reply_to,
        m.content_type,
        m.lock_token,
        m.state,
        m.dead_letter_reason,
        m.dead_letter_description,
    ):
        if text:  # json_len inlined for its printable-ASCII case (one call per message)
            if text.isascii() and text.isprintable():
                size += len(text) + text.count('"') + text.count("\\")
            else:
                size += 6 * len(text)
    for key, value in m.properties.items():
        size += PROPERTY_OVERHEAD_BYTES + json_len(key) + json_len(value)
    return size

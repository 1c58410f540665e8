"""The wire ``Message`` object in its three roles.

- ``MESSAGE_IN``: a message to send (``OutMessage``). The broker-set fields are accepted
  and ignored, so a received message can be echoed back; they are still type-checked.
- ``SAMPLE_MESSAGE``: TestFilter's sample, which also *uses* ``enqueued_at_ms`` /
  ``visible_at_ms`` (0 = not given: the broker clock applies).
- ``RECEIVED_MESSAGE`` / ``PEEKED_MESSAGE``: the two output views of ``types.Message``.
  Receive never shows ``state``/``visible_at_ms``/``expires_at_ms``/dead-letter fields;
  Peek never shows ``lock_token``. Every field is omitted when empty or zero.

Keys follow the original's struct order so encoded bodies look like the Go broker's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mqlite.types import Message, OutMessage

from .shape import Field, Shape
from .values import Base64, Int, StrMap, WireType
from .values import Str as S

_I = Int()
_B = Base64()

# (key, type, doc) for every Message member, in wire order.
_ALL: tuple[tuple[str, WireType, str], ...] = (
    ("seq_number", _I, "broker-assigned, strictly increasing, never reused"),
    ("enqueued_at_ms", _I, "epoch ms"),
    ("expires_at_ms", _I, "epoch ms (Peek only)"),
    ("visible_at_ms", _I, "epoch ms (Peek only)"),
    ("locked_until_ms", _I, "epoch ms; lease deadline"),
    ("delivery_count", _I, "deliveries so far"),
    ("lock_token", S(), "fencing token from a peek-lock Receive"),
    ("state", S(), "Peek only: active, locked, deferred, scheduled or dead_lettered"),
    ("dead_letter_reason", S(), "set on dead letters"),
    ("dead_letter_description", S(), "set on dead letters"),
    ("message_id", S(), "dedup / idempotency key"),
    ("correlation_id", S(), ""),
    ("reply_to", S(), ""),
    ("group_id", S(), "ordering / session key"),
    ("content_type", S(), ""),
    ("subject", S(), "routing label"),
    ("properties", StrMap(), "string -> string headers"),
    ("body", _B, "payload, standard base64"),
)

_INPUT = frozenset(
    (
        "message_id",
        "correlation_id",
        "reply_to",
        "group_id",
        "content_type",
        "subject",
        "properties",
        "body",
    )
)
_RECEIVE_VIEW = _INPUT | {
    "seq_number",
    "enqueued_at_ms",
    "locked_until_ms",
    "delivery_count",
    "lock_token",
}
_PEEK_VIEW = frozenset(key for key, _, _ in _ALL) - {"lock_token"}
_SAMPLE_TIMES = frozenset(("enqueued_at_ms", "visible_at_ms"))


def _input_fields(used: frozenset[str]) -> tuple[Field, ...]:
    out = []
    for key, typ, doc in _ALL:
        if key in used:
            out.append(Field(key, typ, doc=doc))
        else:
            out.append(Field(key, typ, attr=None, doc="output-only: accepted and ignored"))
    return tuple(out)


MESSAGE_IN: Shape[OutMessage] = Shape(
    "Message",
    _input_fields(_INPUT),
    OutMessage,
    doc="A message to send; broker-set fields are accepted and ignored.",
)


@dataclass(frozen=True, slots=True)
class SampleMessage:
    """TestFilter's sample: the message plus the two times the filter may read."""

    message: OutMessage
    enqueued_at_ms: int = 0
    visible_at_ms: int = 0


def _build_sample(enqueued_at_ms: int = 0, visible_at_ms: int = 0, **kw: Any) -> SampleMessage:
    return SampleMessage(OutMessage(**kw), enqueued_at_ms, visible_at_ms)


def _flatten_sample(s: SampleMessage) -> dict[str, Any]:
    m = s.message
    return {
        "enqueued_at_ms": s.enqueued_at_ms,
        "visible_at_ms": s.visible_at_ms,
        **{key: getattr(m, key) for key in _INPUT},
    }


SAMPLE_MESSAGE: Shape[SampleMessage] = Shape(
    "SampleMessage",
    _input_fields(_INPUT | _SAMPLE_TIMES),
    _build_sample,
    _flatten_sample,
    doc="A TestFilter sample; enqueued_at_ms / visible_at_ms default to the broker clock.",
)


def _view(name: str, keys: frozenset[str], doc: str) -> Shape[Message]:
    fields = tuple(Field(key, typ, doc=about) for key, typ, about in _ALL if key in keys)
    return Shape(name, fields, _build_message, doc=doc)


def _build_message(seq_number: int = 0, **kw: Any) -> Message:
    return Message(seq_number, **kw)


RECEIVED_MESSAGE = _view(
    "ReceivedMessage",
    _RECEIVE_VIEW,
    "A received message; settle it with seq_number + lock_token. Empty fields are omitted.",
)
PEEKED_MESSAGE = _view(
    "PeekedMessage",
    _PEEK_VIEW,
    "A browsed message with its state; never a lock token. Empty fields are omitted.",
)

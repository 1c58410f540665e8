"""The wire ``Message`` object in its four roles, and their conversions to ``mqlite.types``.

- ``MessageJSON``: a message to send. The broker-set fields are accepted and ignored (a
  received message can be echoed back); they are still type-checked.
- ``SampleMessage``: TestFilter's sample, which also *uses* ``enqueued_at_ms`` /
  ``visible_at_ms`` (0 = not given: the broker clock applies).
- ``ReceivedMessage`` / ``PeekedMessage``: the two output views of ``types.Message``.
  Receive never shows ``state``/``visible_at_ms``/``expires_at_ms``/dead-letter fields;
  Peek never shows ``lock_token``. Every field is omitted when empty or zero.

Keys follow the original's struct order so encoded bodies look like the Go broker's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec
from msgspec import field

from mqlite import types as t

from .base import I64, Doc, Request, Response, from_attributes

_IGNORED = "output-only: accepted and ignored"

SeqNumber = Annotated[I64, Doc("broker-assigned, strictly increasing, never reused")]
EnqueuedAt = Annotated[I64, Doc("epoch ms")]
ExpiresAt = Annotated[I64, Doc("epoch ms (Peek only)")]
VisibleAt = Annotated[I64, Doc("epoch ms (Peek only)")]
LockedUntil = Annotated[I64, Doc("epoch ms; lease deadline")]
DeliveryCount = Annotated[I64, Doc("deliveries so far")]
LockToken = Annotated[str, Doc("fencing token from a peek-lock Receive")]
StateName = Annotated[str, Doc("Peek only: active, locked, deferred, scheduled or dead_lettered")]
DeadLetterText = Annotated[str, Doc("set on dead letters")]
LastError = Annotated[
    str, Doc("the error of the last failed delivery (Abandon's error, or 'lock expired')")
]
LastErrorAt = Annotated[I64, Doc("epoch ms of last_error")]
MessageId = Annotated[str, Doc("dedup / idempotency key")]
GroupId = Annotated[str, Doc("ordering / session key")]
CorrelationId = Annotated[str, Doc("free-form: ties a reply to its request")]
ReplyTo = Annotated[str, Doc("free-form: where a reply should go")]
ContentType = Annotated[str, Doc("free-form: the body's media type")]
Subject = Annotated[str, Doc("routing label")]
Properties = Annotated[dict[str, str], Doc("string -> string headers")]
Body = Annotated[bytes, Doc("payload, standard base64")]
Ignored = Annotated[I64, Doc(_IGNORED)]
IgnoredStr = Annotated[str, Doc(_IGNORED)]


class MessageJSON(Request):
    """A message to send; broker-set fields are accepted and ignored."""

    seq_number: Ignored = 0
    enqueued_at_ms: Ignored = 0
    expires_at_ms: Ignored = 0
    visible_at_ms: Ignored = 0
    locked_until_ms: Ignored = 0
    delivery_count: Ignored = 0
    lock_token: IgnoredStr = ""
    state: IgnoredStr = ""
    dead_letter_reason: IgnoredStr = ""
    dead_letter_description: IgnoredStr = ""
    last_error: IgnoredStr = ""
    last_error_at_ms: Ignored = 0
    message_id: MessageId = ""
    correlation_id: CorrelationId = ""
    reply_to: ReplyTo = ""
    group_id: GroupId = ""
    content_type: ContentType = ""
    subject: Subject = ""
    properties: Properties = field(default_factory=dict)
    body: Body = b""

    @classmethod
    def of(cls, m: t.OutMessage) -> MessageJSON:
        return cls(
            message_id=m.message_id,
            correlation_id=m.correlation_id,
            reply_to=m.reply_to,
            group_id=m.group_id,
            content_type=m.content_type,
            subject=m.subject,
            properties=m.properties,
            body=m.body,
        )

    def out(self) -> t.OutMessage:
        return t.OutMessage(
            self.body,
            self.message_id,
            self.group_id,
            self.subject,
            self.correlation_id,
            self.reply_to,
            self.content_type,
            self.properties,
        )


_OUT_MESSAGES = tuple[t.OutMessage, ...]


def out_messages(messages: Sequence[MessageJSON]) -> tuple[t.OutMessage, ...]:
    """The engine's values for a decoded Send (the hot path: one per message). msgspec
    fills the frozen dataclasses in C, ~2.5x faster than calling their ``__init__``."""
    out: tuple[t.OutMessage, ...] = msgspec.convert(messages, _OUT_MESSAGES, from_attributes=True)
    return out


class SampleMessage(Request):
    """A TestFilter sample; enqueued_at_ms / visible_at_ms default to the broker clock."""

    seq_number: Ignored = 0
    enqueued_at_ms: Annotated[I64, Doc("epoch ms; 0 = the broker clock")] = 0
    expires_at_ms: Ignored = 0
    visible_at_ms: Annotated[I64, Doc("epoch ms; 0 = enqueued_at_ms")] = 0
    locked_until_ms: Ignored = 0
    delivery_count: Ignored = 0
    lock_token: IgnoredStr = ""
    state: IgnoredStr = ""
    dead_letter_reason: IgnoredStr = ""
    dead_letter_description: IgnoredStr = ""
    last_error: IgnoredStr = ""
    last_error_at_ms: Ignored = 0
    message_id: MessageId = ""
    correlation_id: CorrelationId = ""
    reply_to: ReplyTo = ""
    group_id: GroupId = ""
    content_type: ContentType = ""
    subject: Subject = ""
    properties: Properties = field(default_factory=dict)
    body: Body = b""

    @classmethod
    def of(cls, m: t.OutMessage, enqueued_at_ms: int = 0, visible_at_ms: int = 0) -> SampleMessage:
        return cls(
            enqueued_at_ms=enqueued_at_ms,
            visible_at_ms=visible_at_ms,
            message_id=m.message_id,
            correlation_id=m.correlation_id,
            reply_to=m.reply_to,
            group_id=m.group_id,
            content_type=m.content_type,
            subject=m.subject,
            properties=m.properties,
            body=m.body,
        )

    def out(self) -> t.OutMessage:
        return t.OutMessage(
            self.body,
            self.message_id,
            self.group_id,
            self.subject,
            self.correlation_id,
            self.reply_to,
            self.content_type,
            self.properties,
        )


class ReceivedMessage(Response):
    """A received message; settle it with seq_number + lock_token. Empty fields are omitted."""

    seq_number: SeqNumber = 0
    enqueued_at_ms: EnqueuedAt = 0
    locked_until_ms: LockedUntil = 0
    delivery_count: DeliveryCount = 0
    lock_token: LockToken = ""
    message_id: MessageId = ""
    correlation_id: CorrelationId = ""
    reply_to: ReplyTo = ""
    group_id: GroupId = ""
    content_type: ContentType = ""
    subject: Subject = ""
    properties: Properties = field(default_factory=dict)
    body: Body = b""
    last_error: LastError = ""
    last_error_at_ms: LastErrorAt = 0

    @classmethod
    def of(cls, m: t.Message) -> ReceivedMessage:
        return _received_of(m)

    def value(self, queue: str) -> t.Message:
        """The ``types.Message`` (wire messages carry no queue name; the value does).
        Positional: the fastest way to fill a frozen dataclass of this size."""
        return t.Message(
            self.seq_number,
            queue,
            self.body,
            self.message_id,
            self.group_id,
            self.subject,
            self.correlation_id,
            self.reply_to,
            self.content_type,
            self.properties,
            self.delivery_count,
            self.enqueued_at_ms,
            self.locked_until_ms,
            self.lock_token,
            last_error=self.last_error,
            last_error_at_ms=self.last_error_at_ms,
        )


class PeekedMessage(Response):
    """A browsed message with its state; never a lock token. Empty fields are omitted."""

    seq_number: SeqNumber = 0
    enqueued_at_ms: EnqueuedAt = 0
    expires_at_ms: ExpiresAt = 0
    visible_at_ms: VisibleAt = 0
    locked_until_ms: LockedUntil = 0
    delivery_count: DeliveryCount = 0
    state: StateName = ""
    dead_letter_reason: DeadLetterText = ""
    dead_letter_description: DeadLetterText = ""
    message_id: MessageId = ""
    correlation_id: CorrelationId = ""
    reply_to: ReplyTo = ""
    group_id: GroupId = ""
    content_type: ContentType = ""
    subject: Subject = ""
    properties: Properties = field(default_factory=dict)
    body: Body = b""
    last_error: LastError = ""
    last_error_at_ms: LastErrorAt = 0

    @classmethod
    def of(cls, m: t.Message) -> PeekedMessage:
        return _peeked_of(m)

    def value(self, queue: str) -> t.Message:
        return t.Message(
            self.seq_number,
            queue,
            self.body,
            self.message_id,
            self.group_id,
            self.subject,
            self.correlation_id,
            self.reply_to,
            self.content_type,
            self.properties,
            self.delivery_count,
            self.enqueued_at_ms,
            self.locked_until_ms,
            "",
            self.state,
            self.visible_at_ms,
            self.expires_at_ms,
            self.dead_letter_reason,
            self.dead_letter_description,
            self.last_error,
            self.last_error_at_ms,
        )


_received_of = from_attributes(ReceivedMessage)
_peeked_of = from_attributes(PeekedMessage)

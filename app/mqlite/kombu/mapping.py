"""kombu's message and queue vocabulary in mqlite's terms, as pure functions.

A kombu message becomes an mqlite message field by field, so that ``mqlite peek`` shows
a failed task as a reader expects (the task's serialized body as the body, the task id
as the message id, the routing key as the subject) instead of an opaque envelope:

- body = the producer's serialized bytes; ``content_type`` = kombu's content type;
- ``message_id`` = the AMQP ``message_id`` if set, else Celery's task id (``#retry-N``
  appended for the N-th retry: a retry is a new publication of the same task), else a
  fresh uuid (so a dedup window never merges two distinct id-less messages by body);
- ``subject`` = the routing key; ``correlation_id`` and ``reply_to`` as they are;
- ``group_id`` = the ``MessageGroupId`` property (the spelling of kombu's SQS FIFO queues);
- the headers, the remaining properties and the content encoding ride in three
  ``kombu.*`` properties (JSON), restored exactly on receive;
- the AMQP ``expiration`` (ms) is the message TTL; a Celery ``eta`` in the future makes
  it a scheduled message; a non-zero ``priority`` is refused (mqlite has none).

Deterministic on purpose: kombu's publish retry re-prepares the message, and only the
delivery tag changes, so the dedup window recognises the repeat as the same body.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from mqlite import errors
from mqlite.types import Message, OrderingMode, OutMessage, QueueConfig, QueueKind

HEADERS = "kombu.headers"
PROPERTIES = "kombu.properties"
ENCODING = "kombu.content_encoding"
EXCHANGE = "kombu.exchange"
GROUP_PROPERTY = "MessageGroupId"

# Properties that become native fields, or that kombu recomputes per delivery.
_NATIVE = frozenset(
    {
        "body_encoding",
        "delivery_tag",
        "delivery_info",
        "correlation_id",
        "reply_to",
        "priority",
        "expiration",
        "message_id",
        GROUP_PROPERTY,
    }
)
# How close to now an ETA may be and still be sent at once: the broker refuses a schedule
# whose time has passed by its own clock.
ETA_SLACK_MS = 50
# Dead-letter reasons of a delivery the transport refuses to hand to its consumer.
MALFORMED = "MalformedKombuMessage"  # kombu.* properties or body encoding unreadable
MALFORMED_BODY = "MalformedTaskBody"  # the body does not decode as its content type says
MAX_DESCRIPTION = 1024  # of a dead-letter description (as mqlite.kombu.dead_letter cuts)
PRIORITY_REFUSED = (
    "mqlite has no message priorities ({what}): route urgent tasks to a queue of their own "
    "and give it its own workers (task_routes / apply_async(queue=...))"
)


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def body_bytes(body: object) -> bytes:
    """The serialized body as bytes (kombu hands over ``str`` for text serializers)."""
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    raise errors.InvalidArgument(f"a kombu message body must be bytes or str, not {type(body)}")


def message_id(headers: Mapping[str, Any], properties: Mapping[str, Any]) -> str:
    """The publication's identity: what the dedup window keys on (see the module doc)."""
    explicit = properties.get("message_id")
    if explicit:
        return str(explicit)
    task_id = headers.get("id")
    if task_id:
        retries = headers.get("retries") or 0
        return f"{task_id}#retry-{retries}" if retries else str(task_id)
    return uuid.uuid4().hex


def check_priority(priority: object, what: str) -> None:
    if priority in (None, 0, "0", ""):
        return
    raise errors.InvalidArgument(PRIORITY_REFUSED.format(what=what))


def eta_ms(headers: Mapping[str, Any]) -> int | None:
    """Celery's ``eta`` header (ISO 8601) in epoch ms; naive times are UTC."""
    raw = headers.get("eta")
    if not raw:
        return None
    try:
        when = datetime.fromisoformat(str(raw))
    except ValueError as exc:
        raise errors.InvalidArgument(f"the eta header {raw!r} is not ISO 8601") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One kombu message as mqlite will store it."""

    message: OutMessage
    ttl_ms: int | None
    at_ms: int | None  # a future ETA: schedule instead of send
    transient: bool  # delivery_mode 1: kombu's own lossy traffic (events, pidbox)


def outgoing(payload: Mapping[str, Any], routing_key: str, now_ms: int) -> Outgoing:
    """Map a prepared kombu message (``Channel.prepare_message`` + delivery info)."""
    headers = dict(payload.get("headers") or {})
    props = dict(payload.get("properties") or {})
    info = props.get("delivery_info") or {}
    task = headers.get("task")
    check_priority(
        props.get("priority"),
        f"priority={props.get('priority')!r}" + (f" on task {task}" if task else ""),
    )
    rest = {k: v for k, v in props.items() if k not in _NATIVE}
    properties = {HEADERS: _json(headers), EXCHANGE: str(info.get("exchange") or "")}
    if rest:
        properties[PROPERTIES] = _json(rest)
    if payload.get("content-encoding"):
        properties[ENCODING] = str(payload["content-encoding"])
    msg = OutMessage(
        body=body_bytes(payload.get("body")),
        message_id=message_id(headers, props),
        group_id=str(props.get(GROUP_PROPERTY) or ""),
        subject=routing_key,
        correlation_id=str(props.get("correlation_id") or ""),
        reply_to=str(props.get("reply_to") or ""),
        content_type=str(payload.get("content-type") or ""),
        properties=properties,
    )
    expiration = props.get("expiration")
    ttl = int(float(expiration)) if expiration not in (None, "") else None
    at = eta_ms(headers)
    if at is not None and at <= now_ms + ETA_SLACK_MS:
        at = None
    return Outgoing(msg, ttl if ttl and ttl > 0 else None, at, props.get("delivery_mode") == 1)


class Malformed(Exception):
    """A delivery the transport cannot map: dead-lettered at once with ``reason`` and the
    exception's text, never raised into ``drain_events`` (where Celery would exit, and
    the message, back after its lock, would take down the next worker)."""

    def __init__(self, reason: str, description: str) -> None:
        super().__init__(description)
        self.reason = reason


_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null"}  # fmt: skip


def _json_object(props: Mapping[str, str], key: str) -> dict[str, Any]:
    raw = props.get(key)
    if raw is None:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise Malformed(MALFORMED, f"property {key} is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        what = _JSON_KINDS.get(type(value), type(value).__name__)
        raise Malformed(MALFORMED, f"property {key} must be a JSON object, not {what}")
    return value


def _decoded_body(body: bytes, encoding: object) -> bytes:
    """The body with kombu's ``body_encoding`` undone here, strictly, so that kombu's own
    (lenient) decoding never runs on a foreign message; mqlite's producer never sets one."""
    if encoding in (None, ""):
        return body
    if encoding != "base64":
        raise Malformed(MALFORMED, f"unknown body_encoding {encoding!r} (only base64)")
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Malformed(MALFORMED, f"the body is not valid base64: {exc}") from exc


def incoming(m: Message, delivery_tag: str) -> dict[str, Any]:
    """The kombu payload of a received message: exactly what the producer prepared, with
    this delivery's tag and ``redelivered`` set from the delivery count.

    Raises ``Malformed`` for a message this mapping cannot restore (see the class)."""
    props = m.properties
    restored = _json_object(props, PROPERTIES)
    headers = _json_object(props, HEADERS)
    body = _decoded_body(m.body, restored.pop("body_encoding", None))
    encoding = props.get(ENCODING)
    if m.correlation_id:
        restored["correlation_id"] = m.correlation_id
    if m.reply_to:
        restored["reply_to"] = m.reply_to
    if m.group_id:
        restored[GROUP_PROPERTY] = m.group_id
    restored["priority"] = 0
    restored["delivery_tag"] = delivery_tag
    restored["delivery_info"] = {
        "exchange": props.get(EXCHANGE, ""),
        "routing_key": m.subject,
        "redelivered": m.delivery_count > 1,
    }
    return {
        "body": body,
        "content-type": m.content_type or None,
        "content-encoding": encoding,
        "headers": headers,
        "properties": restored,
        "redelivered": m.delivery_count > 1,
    }


# -- queues ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueDefaults:
    """The app-wide queue config from ``broker_transport_options`` (seconds, as Celery's
    other transports spell them)."""

    lock_duration_ms: int = 30_000
    max_delivery_count: int = 10
    dedup_window_ms: int = 600_000
    ordering_mode: str = OrderingMode.STANDARD

    def config(self) -> QueueConfig:
        return QueueConfig(
            lock_duration_ms=self.lock_duration_ms,
            max_delivery_count=self.max_delivery_count,
            dedup_window_ms=self.dedup_window_ms,
            ordering_mode=self.ordering_mode,
        )


_MQLITE_ARGS = {
    "x-mqlite-lock-duration-ms": "lock_duration_ms",
    "x-mqlite-max-delivery-count": "max_delivery_count",
    "x-mqlite-dedup-window-ms": "dedup_window_ms",
    "x-mqlite-ordering-mode": "ordering_mode",
    "x-mqlite-default-ttl-ms": "default_ttl_ms",
    "x-mqlite-retry-initial-delay-ms": "retry_initial_delay_ms",
    "x-mqlite-retry-max-delay-ms": "retry_max_delay_ms",
    "x-mqlite-retry-multiplier": "retry_multiplier",
    "x-mqlite-retry-jitter": "retry_jitter",
}
_FLOAT_ARGS = frozenset({"retry_multiplier", "retry_jitter"})  # the broker checks the ranges
_REFUSED_ARGS = {
    "x-max-priority": "mqlite has no message priorities: use a queue per priority",
    "x-dead-letter-exchange": "every mqlite queue has its own DLQ (peek --state dead_lettered)",
    "x-dead-letter-routing-key": "every mqlite queue has its own DLQ",
    "x-max-length": "mqlite queues have no length bound",
    "x-max-length-bytes": "mqlite queues have no size bound",
    "x-overflow": "mqlite queues have no length bound",
}
# AMQP arguments with no mqlite meaning that kombu and Celery set on their own queues:
# queues never expire (a consumer deletes its auto-delete queue when it cancels).
_IGNORED_ARGS = frozenset({"x-expires", "x-queue-type", "x-queue-mode", "x-queue-master-locator"})


def _float_arg(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise errors.InvalidArgument(f"queue argument {name} must be a number, got {value!r}")
    try:
        return float(value)
    except ValueError as exc:
        raise errors.InvalidArgument(f"queue argument {name} must be a number") from exc


def _int_arg(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise errors.InvalidArgument(f"queue argument {name} must be a number, got {value!r}")
    try:
        return int(value)
    except ValueError as exc:
        raise errors.InvalidArgument(f"queue argument {name} must be a number") from exc


def queue_config(
    name: str, arguments: Mapping[str, Any] | None, defaults: QueueDefaults
) -> QueueConfig:
    """The config a kombu queue declaration asks for; unknown mqlite arguments and AMQP
    features mqlite lacks are refused naming the queue."""
    cfg = defaults.config()
    changes: dict[str, Any] = {}
    for key, value in (arguments or {}).items():
        if key in _MQLITE_ARGS:
            field = _MQLITE_ARGS[key]
            if field == "ordering_mode":
                changes[field] = str(value)
            elif field in _FLOAT_ARGS:
                changes[field] = float(_float_arg(key, value))
            else:
                changes[field] = _int_arg(key, value)
        elif key == "x-message-ttl":
            changes["default_ttl_ms"] = _int_arg(key, value)
        elif key == "x-delivery-limit":
            changes["max_delivery_count"] = _int_arg(key, value)
        elif key == "x-single-active-consumer":
            if value:
                changes["ordering_mode"] = OrderingMode.STRICT_FIFO
        elif key in _REFUSED_ARGS:
            raise errors.InvalidArgument(f"queue {name!r}: {key} is refused: {_REFUSED_ARGS[key]}")
        elif key.startswith("x-mqlite-"):
            known = ", ".join(sorted(_MQLITE_ARGS))
            raise errors.InvalidArgument(f"queue {name!r}: unknown argument {key} ({known})")
        elif key not in _IGNORED_ARGS:
            raise errors.InvalidArgument(f"queue {name!r}: argument {key} has no mqlite equivalent")
    if "default_ttl_ms" in changes:
        # kombu's control queues set a message TTL: expired control messages vanish,
        # they do not fill the DLQ.
        changes["dead_letter_on_expire"] = False
    return replace(cfg, **changes)


def as_subscription(cfg: QueueConfig) -> QueueConfig:
    return replace(cfg, kind=QueueKind.SUBSCRIPTION)


# -- bindings ----------------------------------------------------------------------------


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _topic_regex(key: str) -> str:
    """An AMQP topic binding key as an anchored RE2 pattern (``*`` one word, ``#`` any)."""
    words = []
    for word in key.split("."):
        if word == "*":
            words.append(r"[^.]+")
        elif word == "#":
            words.append(r".*")
        else:
            words.append(re.escape(word))
    return "^" + r"\.".join(words) + "$"


def binding_filter(exchange_type: str, keys: list[str]) -> str:
    """The subscription filter that routes as the queue's bindings would (on ``subject``,
    the routing key); several keys of one queue are OR-ed; "" matches everything."""
    if exchange_type == "fanout":
        return ""
    terms: list[str] = []
    for key in sorted(set(keys)):
        if exchange_type == "topic":
            if key == "#":
                return ""
            terms.append(f"subject matches {_quote(_topic_regex(key))}")
        else:
            terms.append(f"subject == {_quote(key)}")
    return " || ".join(terms)

"""Value objects shared by every layer: states, ordering modes, queue config, messages.

Enum values are the wire strings. Times are epoch milliseconds with ``_ms`` in the name.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class State(StrEnum):
    ACTIVE = "active"
    LOCKED = "locked"
    DEFERRED = "deferred"
    SCHEDULED = "scheduled"
    DEAD_LETTERED = "dead_lettered"


class OrderingMode(StrEnum):
    STANDARD = "standard"
    GROUP_FIFO = "group_fifo"
    STRICT_FIFO = "strict_fifo"


class QueueKind(StrEnum):
    QUEUE = "queue"
    SUBSCRIPTION = "subscription"


class ReceiveMode(StrEnum):
    PEEK_LOCK = "peek_lock"
    RECEIVE_AND_DELETE = "receive_and_delete"


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """Per-queue configuration (api-reference CreateQueue).

    ``0`` for ``lock_duration_ms``/``max_delivery_count`` takes the default (30 s / 10).
    ``default_ttl_ms`` 0 = unlimited; ``dedup_window_ms`` 0 = off. DLQ bounds: 0 inherits
    the engine default, >0 bounds, -1 (any negative) = unbounded.

    Retry policy (``engine/retry.py``): ``retry_initial_delay_ms`` 0 = off (a failed
    delivery comes back at once, as without a policy); otherwise the n-th failed delivery
    waits ``min(retry_max_delay_ms, initial * retry_multiplier ** (n - 1))``, drawn from
    ``[d * (1 - retry_jitter), d]``, before the next one.
    """

    # The leaves import nothing of ours: these equal defaults.LOCK_DURATION_MS and
    # defaults.MAX_DELIVERY_COUNT (pinned by tests/repo/test_layering.py).
    lock_duration_ms: int = 30_000
    max_delivery_count: int = 10
    default_ttl_ms: int = 0
    dead_letter_on_expire: bool = True
    dedup_window_ms: int = 0
    ordering_mode: str = OrderingMode.STANDARD
    dlq_max_age_ms: int = 0
    dlq_max_count: int = 0
    dlq_max_bytes: int = 0
    kind: str = QueueKind.QUEUE
    retry_initial_delay_ms: int = 0
    retry_multiplier: float = 2.0
    retry_max_delay_ms: int = 900_000
    retry_jitter: float = 0.0


@dataclass(frozen=True, slots=True, init=False)
class OutMessage:
    """A message to send. Empty strings mean "not set"; properties are string -> string
    (None is taken for "none")."""

    body: bytes = b""
    message_id: str = ""
    group_id: str = ""
    subject: str = ""
    correlation_id: str = ""
    reply_to: str = ""
    content_type: str = ""
    properties: dict[str, str] = field(default_factory=dict)

    def __new__(
        cls,
        body: bytes = b"",
        message_id: str = "",
        group_id: str = "",
        subject: str = "",
        correlation_id: str = "",
        reply_to: str = "",
        content_type: str = "",
        properties: dict[str, str] | None = None,
    ) -> OutMessage:
        # Built here rather than by the dataclass's frozen ``__init__``, which sets each
        # field through ``object.__setattr__`` (1.1 µs a message, as much as the rest of
        # a send's validation): the fields are stored on a plain twin with the same slot
        # layout, which then becomes an OutMessage (CPython checks the layouts match).
        # 0.4 µs. Equality, repr, ``replace``, pickling and freezing are the dataclass's.
        self: Any = _new(_OutMessageSlots)
        self.body = body
        self.message_id = message_id
        self.group_id = group_id
        self.subject = subject
        self.correlation_id = correlation_id
        self.reply_to = reply_to
        self.content_type = content_type
        self.properties = {} if properties is None else properties
        self.__class__ = cls
        return self  # type: ignore[no-any-return]


# OutMessage's slots, writable: what ``OutMessage.__new__`` fills.
_OutMessageSlots = type("_OutMessageSlots", (), {"__slots__": OutMessage.__slots__})


_new = object.__new__


class Settler(Protocol):
    """What a received message's bound settle methods call (embedded or HTTP client)."""

    def complete(self, queue: str, seq_number: int, lock_token: str) -> None: ...

    def abandon(
        self, queue: str, seq_number: int, lock_token: str, delay_ms: int = 0, error: str = ""
    ) -> None: ...

    def reject(
        self, queue: str, seq_number: int, lock_token: str, reason: str = "", description: str = ""
    ) -> None: ...

    def defer(self, queue: str, seq_number: int, lock_token: str) -> None: ...

    def renew(self, queue: str, seq_number: int, lock_token: str) -> object: ...


@dataclass(frozen=True, slots=True)
class Message:
    """A received or peeked message (the wire ``Message``).

    Receive fills ``lock_token``/``locked_until_ms`` (peek-lock); Peek fills ``state``,
    ``visible_at_ms``, ``expires_at_ms`` and the dead-letter fields and never a token.
    Both carry ``last_error``/``last_error_at_ms``: the error of the last failed delivery
    (an ``abandon(error=...)``, or ``lock expired``), empty while none failed.
    Messages from a receive carry bound settle methods (``m.complete()`` ...).
    """

    seq_number: int
    queue: str = ""
    body: bytes = b""
    message_id: str = ""
    group_id: str = ""
    subject: str = ""
    correlation_id: str = ""
    reply_to: str = ""
    content_type: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    delivery_count: int = 0
    enqueued_at_ms: int = 0
    locked_until_ms: int = 0
    lock_token: str = ""
    state: str = ""
    visible_at_ms: int = 0
    expires_at_ms: int = 0
    dead_letter_reason: str = ""
    dead_letter_description: str = ""
    last_error: str = ""
    last_error_at_ms: int = 0
    _settler: Settler | None = field(default=None, repr=False, compare=False)

    def bind(self, settler: Settler) -> Message:
        """Return a copy whose settle methods go through ``settler``."""
        return dataclasses.replace(self, _settler=settler)

    def _require_settler(self) -> Settler:
        # Clients bind every message they return (a lockless one to a settler that raises
        # their InvalidArgument); only a hand-built Message reaches this.
        if self._settler is None:
            raise TypeError("this message is not bound to a client: nothing to settle")
        return self._settler

    def complete(self) -> None:
        self._require_settler().complete(self.queue, self.seq_number, self.lock_token)

    def abandon(self, delay_ms: int = 0, error: str = "") -> None:
        """Release the lock for a redelivery: after ``delay_ms`` (> 0 wins over the queue's
        retry policy; 0 leaves the delay to it), keeping ``error`` as the message's
        ``last_error`` (at most 4 KiB of UTF-8)."""
        self._require_settler().abandon(
            self.queue, self.seq_number, self.lock_token, delay_ms, error
        )

    def reject(self, reason: str = "", description: str = "") -> None:
        self._require_settler().reject(
            self.queue, self.seq_number, self.lock_token, reason, description
        )

    def defer(self) -> None:
        self._require_settler().defer(self.queue, self.seq_number, self.lock_token)

    def renew(self) -> None:
        self._require_settler().renew(self.queue, self.seq_number, self.lock_token)


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """A queue as ListQueues reports it, with its full config and generation."""

    name: str
    config: QueueConfig
    generation: str
    created_at_ms: int = 0
    updated_at_ms: int = 0

    @property
    def kind(self) -> str:
        return self.config.kind


@dataclass(frozen=True, slots=True)
class QueueEnsured:
    """What ``ensure_queue`` found or made: the queue as it now is, whether this call
    created it, and (when it already existed) the config fields in which it differs
    from the config asked for. An existing queue is never changed by ensure_queue."""

    queue: QueueInfo
    created: bool
    differs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Subscription:
    topic: str
    name: str
    expr: str = ""


@dataclass(frozen=True, slots=True)
class Stats:
    queue: str
    active: int = 0
    locked: int = 0
    deferred: int = 0
    scheduled: int = 0
    dead_lettered: int = 0
    total: int = 0
    oldest_message_age_ms: int = 0


@dataclass(frozen=True, slots=True)
class BatchResult:
    """One item of CompleteBatch (``locked_until_ms`` is 0) or RenewBatch."""

    seq_number: int
    ok: bool
    locked_until_ms: int = 0


@dataclass(frozen=True, slots=True)
class FilterTestResult:
    valid: bool
    error: str = ""
    ran: bool = False
    matched: bool = False


class Permission(StrEnum):
    SEND = "send"
    LISTEN = "listen"
    MANAGE = "manage"
    # Observe and /metrics: configured monitor credentials, and everything with manage.
    # Never a managed-key permission (keys.MANAGED_PERMISSIONS leaves it out).
    MONITOR = "monitor"


@dataclass(frozen=True, slots=True)
class AccessKey:
    """A managed access key's metadata: never the token, never its digest.

    ``expires_at_ms`` 0 = no expiry; ``revoked_at_ms`` 0 = not revoked. ``queues``: the
    queue-name patterns the key is confined to (empty = every queue); ``rate_limit_per_s``
    and ``burst``: its token bucket (0 = the broker default).
    """

    id: str
    name: str
    permissions: tuple[str, ...]
    created_at_ms: int
    expires_at_ms: int = 0
    revoked_at_ms: int = 0
    queues: tuple[str, ...] = ()
    rate_limit_per_s: int = 0
    burst: int = 0


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One row of the audit trail (docs/operations.md "Audit trail"): ``action`` (the
    verb, e.g. ``Purge``) by ``actor`` (``admin:<n>``, ``key:<id>``, ``anonymous`` or
    ``embedded``) at ``at_ms``, for the HTTP request ``request_id`` ("" embedded);
    ``queue`` the queue or topic it touched ("" for keys); ``detail`` a JSON object of
    the change's facts (a count, a target, a config diff), never a token or a body."""

    id: int
    at_ms: int
    actor: str
    request_id: str
    action: str
    queue: str
    detail: str


@dataclass(frozen=True, slots=True)
class Schedule:
    """A cron schedule (docs/cron.md): sends ``message`` to ``queue`` (a queue, or a topic
    that fans out) at every slot of ``cron`` in ``timezone``.

    ``status``: ``active``, ``paused``, or ``target missing`` (the queue or topic is gone:
    the schedule does not fire until it exists again). Times are epoch ms, 0 = never.
    """

    name: str
    cron: str
    queue: str
    message: OutMessage
    timezone: str = "UTC"
    catch_up: str = "latest"
    paused: bool = False
    next_fire_at_ms: int = 0
    last_fired_at_ms: int = 0
    last_slot_ms: int = 0
    fired: int = 0
    status: str = "active"
    created_at_ms: int = 0
    updated_at_ms: int = 0


@dataclass(frozen=True, slots=True)
class PushTarget:
    """A queue's push target (docs/push.md): the broker POSTs each message to ``url``.

    ``status``: ``active``, ``paused`` (kept, nothing delivered), or ``failing`` (the last
    attempt did not succeed). ``last_status`` is the last HTTP status (0: none, or no
    answer); ``delivered``/``failed`` count attempts since the broker started.
    ``secret`` is set only in CreatePush's answer when the broker generated it (shown
    once); every other answer leaves it empty. Times are epoch ms, 0 = never.
    """

    queue: str
    url: str
    max_in_flight: int = 8
    timeout_ms: int = 10_000
    paused: bool = False
    status: str = "active"
    last_status: int = 0
    last_error: str = ""
    last_attempt_at_ms: int = 0
    next_attempt_at_ms: int = 0
    delivered: int = 0
    failed: int = 0
    created_at_ms: int = 0
    updated_at_ms: int = 0
    secret: str = ""

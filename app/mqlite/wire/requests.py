"""Request values (what a client POSTs, what the server decodes; shapes in request_shapes).

Requests decode into ``mqlite.types`` values where one exists (``OutMessage``,
``QueueConfig``) and into the small frozen dataclasses below otherwise. Defaults are the
wire's zero values ("absent" and ``0``/``""`` mean the same thing), except where a type
says otherwise (``QueueConfig``: ``dead_letter_on_expire`` true; explicit zeros still
mean "take the default" to the engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from mqlite.types import OutMessage, QueueConfig, ReceiveMode


@dataclass(frozen=True, slots=True)
class SendRequest:
    """Send and Schedule. ``scheduled_enqueue_time_ms``/``ttl_ms`` 0 = not set."""

    queue: str
    messages: tuple[OutMessage, ...]
    scheduled_enqueue_time_ms: int = 0
    ttl_ms: int = 0


@dataclass(frozen=True, slots=True)
class ReceiveRequest:
    """``max_messages`` 0 means 1; ``receive_mode`` 0 = peek-lock, 1 = receive-and-delete."""

    queue: str
    max_messages: int = 0
    wait_time_ms: int = 0
    receive_mode: int = 0
    receive_attempt_id: str = ""

    @property
    def mode(self) -> ReceiveMode:
        return ReceiveMode.RECEIVE_AND_DELETE if self.receive_mode else ReceiveMode.PEEK_LOCK


@dataclass(frozen=True, slots=True)
class SettleRequest:
    """Complete / Abandon / Reject / Defer / Renew (each reads the extras it needs)."""

    queue: str
    seq_number: int
    lock_token: str
    dead_letter_reason: str = ""
    dead_letter_description: str = ""
    delay_ms: int = 0


class SettleItem(NamedTuple):
    """One ``{seq_number, lock_token}`` pair of CompleteBatch / RenewBatch."""

    seq_number: int
    lock_token: str


@dataclass(frozen=True, slots=True)
class BatchSettleRequest:
    queue: str
    messages: tuple[SettleItem, ...]


@dataclass(frozen=True, slots=True)
class ReceiveDeferredRequest:
    queue: str
    seq_numbers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CancelRequest:
    queue: str
    seq_number: int


@dataclass(frozen=True, slots=True)
class PeekRequest:
    """``state`` "" = every state; ``max`` 0 = the default (32)."""

    queue: str
    from_seq: int = 0
    state: str = ""
    max: int = 0


@dataclass(frozen=True, slots=True)
class StatsRequest:
    queue: str


@dataclass(frozen=True, slots=True)
class CreateQueueRequest:
    """``config`` None = every default."""

    name: str
    config: QueueConfig | None = None


@dataclass(frozen=True, slots=True)
class DeleteQueueRequest:
    name: str
    generation: str


@dataclass(frozen=True, slots=True)
class SubscribeRequest:
    """``expr`` "" = match all (the wire's ``filter`` absent, ``{}`` or ``{"expr": ""}``)."""

    topic: str
    name: str
    expr: str = ""


@dataclass(frozen=True, slots=True)
class UnsubscribeRequest:
    topic: str
    name: str


@dataclass(frozen=True, slots=True)
class EmptyRequest:
    """ListQueues / ListSubscriptions / Status take ``{}`` (an empty body is accepted too)."""


@dataclass(frozen=True, slots=True)
class TestFilterRequest:
    """``message`` None = compile only; the times 0 = the broker clock (visible = enqueued)."""

    __test__ = False  # not a pytest class

    expr: str
    message: OutMessage | None = None
    enqueued_at_ms: int = 0
    visible_at_ms: int = 0


@dataclass(frozen=True, slots=True)
class RedriveRequest:
    """``target`` "" = back to this queue's active state; zero bounds = all."""

    queue: str
    target: str = ""
    max: int = 0
    older_than_ms: int = 0
    rate_per_sec: int = 0


@dataclass(frozen=True, slots=True)
class PurgeRequest:
    queue: str
    max: int = 0
    older_than_ms: int = 0


@dataclass(frozen=True, slots=True)
class CreateKeyRequest:
    id: str
    name: str
    permissions: tuple[str, ...]
    expires_at_ms: int = 0


@dataclass(frozen=True, slots=True)
class ListKeysRequest:
    """``limit`` 0 = 100; ``sort`` "" = ``id_asc``."""

    after_id: str = ""
    limit: int = 0
    sort: str = ""


@dataclass(frozen=True, slots=True)
class RevokeKeyRequest:
    id: str

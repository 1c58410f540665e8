"""Response values (what the server encodes, what the SDK decodes; shapes in response_shapes).

``required`` on a response field means "always emitted" (counts even when 0, lists as
``[]``); every other field is omitted while empty/zero, and the OpenAPI schema marks
exactly the required ones. Decoding a response is lenient: unknown fields are ignored and
absent/``null`` fields take their zero value, so an old SDK survives a newer broker.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqlite.types import AccessKey, BatchResult, Message, QueueInfo, Subscription


@dataclass(frozen=True, slots=True)
class SendResponse:
    """One seq per input message, positional (0 = a dedup conflict in a batch)."""

    seq_numbers: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class MessagesResponse:
    """Receive / ReceiveDeferred (receive view) and Peek (peek view)."""

    messages: tuple[Message, ...] = ()


@dataclass(frozen=True, slots=True)
class OkResponse:
    ok: bool = True


@dataclass(frozen=True, slots=True)
class BatchResponse:
    results: tuple[BatchResult, ...] = ()


@dataclass(frozen=True, slots=True)
class EmptyResponse:
    pass


@dataclass(frozen=True, slots=True)
class DeleteQueueResponse:
    deleted: bool = True


@dataclass(frozen=True, slots=True)
class ListQueuesResponse:
    queues: tuple[QueueInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class ListSubscriptionsResponse:
    subscriptions: tuple[Subscription, ...] = ()


@dataclass(frozen=True, slots=True)
class RedriveResponse:
    moved: int = 0


@dataclass(frozen=True, slots=True)
class PurgeResponse:
    purged: int = 0


@dataclass(frozen=True, slots=True)
class StatusResponse:
    """A desensitized runtime snapshot (never a DSN or a token)."""

    version: str = ""
    backend: str = ""
    remote: bool = False
    location: str = ""
    schema_version: str = ""
    ping_ms: int = 0
    db_size_bytes: int = 0
    queues: int = 0
    subscriptions: int = 0
    uptime_ms: int = 0
    auth: bool = False


@dataclass(frozen=True, slots=True)
class CreateKeyResponse:
    """The key's metadata and its secret, returned exactly once."""

    key: AccessKey
    token: str


@dataclass(frozen=True, slots=True)
class ListKeysResponse:
    """``next_after_id`` "" = last page."""

    keys: tuple[AccessKey, ...] = ()
    next_after_id: str = ""

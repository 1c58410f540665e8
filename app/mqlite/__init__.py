"""mqlite: a message broker on one SQLite file, with Azure Service Bus semantics.

Start with ``mqlite.open_embedded("file:./mq.db")`` (the broker in your process, see
docs/embedded.md) or ``mqlite.connect(url, token)`` (a broker over HTTP, docs/sdk.md).

Importing ``mqlite`` loads neither the engine nor sqlite3, re2, simpleeval or APScheduler:
``open_embedded`` and ``EmbeddedClient`` are resolved on first use, so a process that only
talks to a broker never pays for them.
"""

from typing import TYPE_CHECKING, Any

from mqlite import aio, errors
from mqlite.sdk.endpoint import ConnectionFailed
from mqlite.sdk.http import HttpClient, connect
from mqlite.sdk.keys import generate_key_id
from mqlite.sdk.protocol import Client
from mqlite.sdk.receiver import Backoff, DeadLetter, Receiver, ReceiverStats
from mqlite.sdk.retry import RetryPolicy
from mqlite.types import (
    BatchResult,
    Message,
    OrderingMode,
    OutMessage,
    QueueConfig,
    QueueInfo,
    ReceiveMode,
    State,
    Stats,
    Subscription,
)
from mqlite.version import VERSION as __version__

if TYPE_CHECKING:
    from mqlite.sdk.embedded import EmbeddedClient, open_embedded

_LAZY = {"EmbeddedClient", "open_embedded"}


def __getattr__(name: str) -> Any:
    """``open_embedded``/``EmbeddedClient`` import the engine only when first asked for."""
    if name in _LAZY:
        from mqlite.sdk import embedded

        value = getattr(embedded, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mqlite' has no attribute {name!r}")


__all__ = [
    "Backoff",
    "BatchResult",
    "Client",
    "ConnectionFailed",
    "DeadLetter",
    "EmbeddedClient",
    "HttpClient",
    "Message",
    "OrderingMode",
    "OutMessage",
    "QueueConfig",
    "QueueInfo",
    "ReceiveMode",
    "Receiver",
    "ReceiverStats",
    "RetryPolicy",
    "State",
    "Stats",
    "Subscription",
    "__version__",
    "aio",
    "connect",
    "errors",
    "generate_key_id",
    "open_embedded",
]

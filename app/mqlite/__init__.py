"""mqlite: a message broker on one SQLite file, with Azure Service Bus semantics.

Start with ``mqlite.open_embedded("file:./mq.db")``; see docs/embedded.md.
"""

from mqlite import aio, errors
from mqlite.sdk.embedded import EmbeddedClient, open_embedded
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

__version__ = "0.1.0"


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

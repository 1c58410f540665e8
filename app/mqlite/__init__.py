"""mqlite: a message broker on one SQLite file, with Azure Service Bus semantics.

Start with ``mqlite.open_embedded("file:./mq.db")``; see docs/embedded.md.
"""

from mqlite import errors
from mqlite.sdk.embedded import EmbeddedClient, open_embedded
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
    "BatchResult",
    "EmbeddedClient",
    "Message",
    "OrderingMode",
    "OutMessage",
    "QueueConfig",
    "QueueInfo",
    "ReceiveMode",
    "State",
    "Stats",
    "Subscription",
    "__version__",
    "errors",
    "open_embedded",
]

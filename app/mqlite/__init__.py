"""mqlite: a message broker on one SQLite file, with Azure Service Bus semantics.

Start with ``mqlite.open_embedded("file:./mq.db")``; see docs/embedded.md.

Attributes load on first use (PEP 562): ``import mqlite`` and ``mqlite.connect`` load no
engine, sqlite3, re2 or APScheduler, and the ``mqlite serve`` master (which imports only
``mqlite.config``) stays small enough to keep the appliance's idle tree under 70 MB.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mqlite.version import VERSION as __version__

if TYPE_CHECKING:
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
        PushTarget,
        QueueConfig,
        QueueEnsured,
        QueueInfo,
        ReceiveMode,
        Schedule,
        State,
        Stats,
        Subscription,
    )

# Public name -> the module defining it (a submodule itself for ``aio`` and ``errors``).
_LAZY = {
    "aio": "mqlite.aio",
    "errors": "mqlite.errors",
    "EmbeddedClient": "mqlite.sdk.embedded",
    "open_embedded": "mqlite.sdk.embedded",
    "ConnectionFailed": "mqlite.sdk.endpoint",
    "HttpClient": "mqlite.sdk.http",
    "connect": "mqlite.sdk.http",
    "generate_key_id": "mqlite.sdk.keys",
    "Client": "mqlite.sdk.protocol",
    "Backoff": "mqlite.sdk.receiver",
    "DeadLetter": "mqlite.sdk.receiver",
    "Receiver": "mqlite.sdk.receiver",
    "ReceiverStats": "mqlite.sdk.receiver",
    "RetryPolicy": "mqlite.sdk.retry",
    "BatchResult": "mqlite.types",
    "Message": "mqlite.types",
    "OrderingMode": "mqlite.types",
    "OutMessage": "mqlite.types",
    "PushTarget": "mqlite.types",
    "QueueConfig": "mqlite.types",
    "QueueInfo": "mqlite.types",
    "QueueEnsured": "mqlite.types",
    "ReceiveMode": "mqlite.types",
    "Schedule": "mqlite.types",
    "State": "mqlite.types",
    "Stats": "mqlite.types",
    "Subscription": "mqlite.types",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'mqlite' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if module_name == f"mqlite.{name}" else getattr(module, name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


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
    "PushTarget",
    "QueueConfig",
    "QueueEnsured",
    "QueueInfo",
    "ReceiveMode",
    "Receiver",
    "ReceiverStats",
    "RetryPolicy",
    "Schedule",
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

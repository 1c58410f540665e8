"""One function per RPC: decoded request → engine call on the writer thread → response value.

Handlers hold no SQL and no encoding: the engine validates and decides, ``mqlite.wire``
encodes (each response Struct's ``of`` builds it from the engine's values). Each records
what the access log may show (queue, item count), never a body.
"""

from __future__ import annotations

from mqlite.server import admin_handlers, queue_handlers
from mqlite.server.context import HANDLERS, Context, Handler

__all__ = ["HANDLERS", "Context", "Handler", "admin_handlers", "queue_handlers"]

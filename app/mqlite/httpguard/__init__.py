"""The HTTP/1.1 bounds every mqlite listener serves behind: ``mqlite serve`` (its uvicorn
worker) and ``mqlite-mcp --http``. One implementation, so the two cannot drift: the
request head's size and deadline (which is also the idle keep-alive timeout), the body
deadline, the connection cap (with eviction of connections that sent nothing) and the
descriptor limit it is bounded by, all answered with the JSON error envelope.

Below both transports (the layers contract in pyproject.toml): it knows the wire's error
envelope and the defaults, never the engine, the broker's app or the MCP SDK.
"""

from __future__ import annotations

from .fdlimit import connection_cap
from .protocol import GuardedHttpProtocol, envelope_response

__all__ = ["GuardedHttpProtocol", "connection_cap", "envelope_response"]

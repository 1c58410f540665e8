"""The same tools over streamable HTTP (``mqlite-mcp --http HOST:PORT``), at ``/mcp``.

The listener is a door to the broker with this process's credential behind it, so it
demands that same credential: every HTTP request must carry ``Authorization: Bearer
<MQLITE_TOKEN>``, compared in constant time (digests of equal length, so neither the
content nor the length of the token leaks through timing). Anything else is a 401 with
``WWW-Authenticate: Bearer`` before the MCP SDK sees the request.

The SDK's streamable-HTTP transport runs stateless with JSON responses: every tool call
is independent, so no session state is kept between requests. On a loopback address the
SDK also turns on its DNS-rebinding protection (Host and Origin checks).

Underneath, the listener speaks HTTP through the broker's own guarded protocol
(``mqlite.httpguard``), with the same bounds as ``mqlite serve``: a request head of at
most 16 KiB complete within 5 s (which closes idle keep-alive connections too), the body
within 60 s, and a connection cap (``MQLITE_MAX_CONNECTIONS``, at most the descriptor
limit less a reserve) that evicts connections which sent nothing before it refuses one.
A hostile client is stopped before the bearer check ever runs.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from starlette.types import ASGIApp, Receive, Scope, Send

from mqlite import defaults, errors
from mqlite.httpguard import GuardedHttpProtocol, connection_cap
from mqlite.wire import error_body

log = logging.getLogger("mqlite.mcp")

PATH = "/mcp"


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


class BearerGate:
    """ASGI middleware: HTTP requests without the expected bearer token get a 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("the HTTP listener needs a token")
        self.app = app
        self._expected = _digest(token.encode("utf-8"))

    def allows(self, headers: list[tuple[bytes, bytes]]) -> bool:
        presented = b""
        for name, value in headers:
            if name.lower() == b"authorization":
                scheme, _, credential = value.strip().partition(b" ")
                if scheme.lower() == b"bearer":
                    presented = credential.strip()
                break
        # Always compare, even with nothing presented: the same work on every path.
        return hmac.compare_digest(_digest(presented), self._expected) and bool(presented)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.allows(list(scope.get("headers", []))):
            client = scope.get("client")
            log.warning(
                "refused: missing or wrong bearer token",
                extra={"path": scope.get("path", ""), "client": client[0] if client else ""},
            )
            body = error_body(errors.Unauthenticated())
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode("ascii")),
                        (b"www-authenticate", b'Bearer realm="mqlite-mcp"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def app(server: Server[Any], token: str, host: str) -> ASGIApp:
    """The ASGI app: the SDK's streamable-HTTP app behind the bearer gate."""
    inner = server.streamable_http_app(
        streamable_http_path=PATH, stateless_http=True, json_response=True, host=host
    )
    return BearerGate(inner, token)


def serve_http(
    server: Server[Any],
    token: str,
    host: str,
    port: int,
    max_connections: int = defaults.MAX_CONNECTIONS,
) -> bool:
    """Serve until SIGINT/SIGTERM; False if it never started (the address is taken).
    Logs go to stderr through our handlers (no access log: the forwarder logs one line
    per tool call, the gate one per refusal)."""
    GuardedHttpProtocol.configure(connection_cap(max_connections))
    config = uvicorn.Config(
        app(server, token, host),
        host=host,
        port=port,
        http=GuardedHttpProtocol,
        # After a response, the head deadline of the next request: the idle timeout.
        timeout_keep_alive=int(defaults.HEAD_TIMEOUT_S),
        log_config=None,
        access_log=False,
        server_header=False,
        lifespan="on",
    )
    listener = uvicorn.Server(config)
    listener.run()
    return listener.started

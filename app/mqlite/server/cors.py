"""CORS per ``MQLITE_CORS``: a fixed allow-origin on every response, preflights answered
before auth (original-behaviour §8 "CORS"). Pure ASGI: no per-request objects."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PREFLIGHT_HEADERS = [
    (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
    (b"access-control-allow-headers", b"Authorization, Content-Type"),
    (b"access-control-max-age", b"86400"),
]


def cors_headers(allow_origin: str | None) -> list[tuple[bytes, bytes]]:
    """The headers every response carries (none when CORS is off)."""
    if not allow_origin:
        return []
    headers = [(b"access-control-allow-origin", allow_origin.encode("latin-1"))]
    if allow_origin != "*":
        headers.append((b"vary", b"Origin"))
    return headers


class CORSMiddleware:
    def __init__(self, app: ASGIApp, allow_origin: str) -> None:
        self.app = app
        self.headers = cors_headers(allow_origin)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            await send(
                {
                    "type": "http.response.start",
                    "status": 204,
                    "headers": self.headers + PREFLIGHT_HEADERS,
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return

        async def send_with_origin(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + self.headers
            await send(message)

        await self.app(scope, receive, send_with_origin)

"""JSON logs (python-json-logger): one line per request, never a token or a body.

The access-log middleware times the whole request and records the status; handlers add
``queue``/``n``/``code`` fields to ``scope["state"]["log"]``. An empty Receive logs at
debug, 5xx at error, 4xx at warning, the rest at info.
"""

from __future__ import annotations

import logging
import sys
import time

from pythonjsonlogger.json import JsonFormatter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

access_log = logging.getLogger("mqlite.access")


def configure(level: str = "INFO") -> None:
    """Send every mqlite log record to stderr as one JSON object per line."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter(
            "%(asctime)s %(levelname)s %(name)s %(message)s",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        )
    )
    root = logging.getLogger("mqlite")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def route_name(path: str) -> str:
    return path[len("/mqlite.v1.") :] if path.startswith("/mqlite.v1.") else path


class AccessLogMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        fields: dict[str, object] = {}
        scope.setdefault("state", {})["log"] = fields

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            level = logging.INFO
            if status >= 500:
                level = logging.ERROR
            elif status >= 400:
                level = logging.WARNING
            elif fields.get("empty_receive"):
                level = logging.DEBUG
            if access_log.isEnabledFor(level):
                fields.pop("empty_receive", None)
                access_log.log(
                    level,
                    route_name(scope["path"]),
                    extra={
                        "route": route_name(scope["path"]),
                        "method": scope["method"],
                        "status": status,
                        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                        **fields,
                    },
                )

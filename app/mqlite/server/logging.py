"""JSON logs (python-json-logger): one line per request, never a token or a body.

Every line has the shape of ``jsonlog.LineFormatter`` (``time`` in RFC 3339 UTC, ``level``,
``logger``, ``msg``, ``pid``, then the event's fields), like every other line the broker
process writes.

RPC endpoints (and, for every other path, the access-log middleware) time the request
and record its status; handlers add ``queue``/``n``/``code`` fields. An empty Receive logs
at debug, 5xx at error, 4xx at warning, the rest at info.

Everything expensive happens on a log thread, not on the event loop: an access line is
queued as a bare (level, route, fields) tuple and serialized by python-json-logger on
the log thread, which wakes every 50 ms (building a LogRecord on the loop -- findCaller,
thread and process lookups -- cost a third of a Send's loop time). Its ``time`` is
therefore when the line was serialized, at most ~50 ms after the request ended
(``duration_ms`` is exact).
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import time
from typing import TextIO

from pythonjsonlogger.json import JsonFormatter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mqlite.clock import SYSTEM_CLOCK
from mqlite.defaults import LOG_FIELD_MAX_CHARS
from mqlite.jsonlines import rfc3339_ms
from mqlite.server.jsonlog import FORMATTER, raw

access_log = logging.getLogger("mqlite.access")

FLUSH_INTERVAL_S = 0.05
YIELD_EVERY = 8  # lines formatted between GIL hand-backs


_Item = logging.LogRecord | tuple[int, str, dict[str, object]] | None


class _Enqueue(logging.Handler):
    """Hand the record to the writer thread as is (no copy, no formatting here)."""

    def __init__(self, records: queue.SimpleQueue[_Item]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.put(record)


class _LogWriter:
    """A thread that formats queued records with python-json-logger and writes every
    record waiting at that moment with one write: the event loop never makes a write
    syscall per request (with two busy threads each such syscall costs a GIL hand-over,
    measured at ~80 us per request under load)."""

    def __init__(self, stream: TextIO, formatter: JsonFormatter) -> None:
        self.records: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._stream = stream
        self._formatter = formatter
        self._access = _AccessLines(formatter)
        self._thread = threading.Thread(target=self._run, name="mqlite-log", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        records = self.records
        while True:
            batch = [records.get()]
            if batch[0] is not None:
                # Let lines gather: one wake-up and one write per interval instead of a
                # thread hand-off (and a GIL hand-over) per request.
                time.sleep(FLUSH_INTERVAL_S)
            while not records.empty():
                batch.append(records.get_nowait())
            lines: list[str] = []
            for i, item in enumerate(batch):
                if isinstance(item, logging.LogRecord):
                    lines.append(self._formatter.format(item))
                elif item is not None:
                    lines.append(self._access.line(*item))
                if i % YIELD_EVERY == YIELD_EVERY - 1:
                    time.sleep(0)  # hand the GIL back: never stall the event loop for a burst
            if lines:
                try:
                    self._stream.write("\n".join(lines) + "\n")
                    self._stream.flush()
                except (OSError, ValueError):
                    pass  # stderr closed: logging must never take the broker down
            if None in batch:
                return

    def stop(self) -> None:
        self.records.put(None)
        self._thread.join(timeout=5)


class _AccessLines:
    """Turns a queued (level, route, fields) access tuple into its JSON line.

    Same fields and order as a formatted LogRecord (time, level, logger, msg, pid, then
    the request's fields), serialized by python-json-logger's ``jsonify_log_record`` --
    without building a LogRecord and sifting its attributes, which was most of the
    ~14 us a line cost.
    """

    def __init__(self, formatter: JsonFormatter) -> None:
        self._formatter = formatter
        self._pid = os.getpid()  # the worker's: this object is built inside it
        self._second = -1
        self._stamp = ""

    def line(self, level: int, route: str, fields: dict[str, object]) -> str:
        now_ms = SYSTEM_CLOCK.now_ms()
        second, millis = divmod(now_ms, 1000)
        if second != self._second:  # strftime once a second, not once a line
            self._second = second
            self._stamp = rfc3339_ms(second * 1000)[:-5]  # without ".mmmZ"
        data: dict[str, object] = {
            "time": f"{self._stamp}.{millis:03d}Z",
            "level": logging.getLevelName(level),
            "logger": access_log.name,
            "msg": route,
            "pid": self._pid,
        }
        data.update(fields)
        return self._formatter.jsonify_log_record(data)


_writer: _LogWriter | None = None

# MQLITE_ACCESS_LOG: which requests get an access line. ``errors`` (the default): a 4xx or
# 5xx answer, or a request slower than SLOW_REQUEST_S; ``all``: every request; ``off``:
# none (failures inside the broker are still logged by their own loggers).
ACCESS_LOG_MODES = ("all", "errors", "off")
SLOW_REQUEST_S = 1.0
_access_mode = "errors"


def configure(level: str = "INFO", access: str = "errors") -> None:
    """Send every mqlite log record to stderr as one JSON object per line; ``access`` is
    the access-log mode (``ACCESS_LOG_MODES``)."""
    global _writer, _access_mode
    if access not in ACCESS_LOG_MODES:
        raise ValueError(f"access log mode must be one of {ACCESS_LOG_MODES}, got {access!r}")
    _access_mode = access
    stop()
    _writer = _LogWriter(raw(sys.stderr), FORMATTER)
    root = logging.getLogger("mqlite")
    root.handlers[:] = [_Enqueue(_writer.records)]
    root.setLevel(level)
    root.propagate = False


def stop() -> None:
    """Write what is queued and stop the log writer (at shutdown; safe to call twice)."""
    global _writer
    if _writer is not None:
        _writer.stop()
        _writer = None


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
            log_request(scope, status, started, fields)


def clip(value: str) -> str:
    """At most ``LOG_FIELD_MAX_CHARS`` of a logged string, saying how much was cut: a
    field a client chose (a 30 MB queue name, a path) must not become a 30 MB line."""
    if len(value) <= LOG_FIELD_MAX_CHARS:
        return value
    return f"{value[:LOG_FIELD_MAX_CHARS]}...(+{len(value) - LOG_FIELD_MAX_CHARS} chars)"


def log_request(scope: Scope, status: int, started: float, fields: dict[str, object]) -> None:
    """The one access-log line of a request (5xx error, 4xx warning, empty Receive debug),
    if the access-log mode wants it (a successful fast request is skipped under ``errors``
    before any work: no field is clipped, no tuple queued)."""
    mode = _access_mode
    if mode != "all" and (
        mode == "off" or (status < 400 and time.perf_counter() - started < SLOW_REQUEST_S)
    ):
        return
    level = logging.INFO
    if status >= 500:
        level = logging.ERROR
    elif status >= 400:
        level = logging.WARNING
    elif fields.pop("empty_receive", False):
        level = logging.DEBUG
    if access_log.isEnabledFor(level):
        route = clip(route_name(scope["path"]))
        for key, value in fields.items():
            if type(value) is str and len(value) > LOG_FIELD_MAX_CHARS:
                fields[key] = clip(value)
        fields.update(
            route=route,
            method=scope["method"],
            status=status,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )
        writer = _writer
        if writer is not None:
            writer.records.put((level, route, fields))
        else:  # logging not configured (embedded use of the app): the standard path
            access_log.log(level, route, extra=fields)

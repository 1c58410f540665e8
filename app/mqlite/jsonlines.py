"""The one shape of every JSON log line mqlite writes, shared by ``mqlite serve``
(``server/jsonlog.py``) and ``mqlite-mcp`` (``mcp/logs.py``), two transports that may not
import each other: ``{"time", "level", "logger", "msg", "pid", ...fields}``, ``time`` in
RFC 3339 UTC to the millisecond (``2026-12-01T07:26:54.318Z``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s %(process)d"
RENAMES = {
    "asctime": "time",
    "levelname": "level",
    "name": "logger",
    "message": "msg",
    "process": "pid",
}


def rfc3339_ms(epoch_ms: int) -> str:
    """``2026-12-01T07:26:54.318Z``: UTC, millisecond precision."""
    second, millis = divmod(epoch_ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)) + f".{millis:03d}Z"


class LineFormatter(JsonFormatter):
    """``{"time", "level", "logger", "msg", "pid", ...}``; ``time`` in RFC 3339 UTC.
    ``reserved_attrs``: record attributes never written as fields."""

    def __init__(self, reserved_attrs: Sequence[str] = RESERVED_ATTRS) -> None:
        super().__init__(FIELDS, rename_fields=RENAMES, reserved_attrs=reserved_attrs)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return rfc3339_ms(int(record.created * 1000))

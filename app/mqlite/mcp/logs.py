"""``mqlite-mcp``'s logs: JSON lines on stderr, in the broker's shape.

stdout is the protocol on stdio, so nothing else may ever write there: every handler
goes to stderr. Each line is ``{"time", "level", "logger", "msg", "pid", ...fields}``,
``time`` RFC 3339 UTC to the millisecond, as ``mqlite serve`` writes them (its formatter
lives in the server package, which this one must not import). Never a token, an
argument or a result: ``forward`` logs names, codes and durations only.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

from pythonjsonlogger.json import JsonFormatter

FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s %(process)d"
RENAMES = {
    "asctime": "time",
    "levelname": "level",
    "name": "logger",
    "message": "msg",
    "process": "pid",
}


class LineFormatter(JsonFormatter):
    """``{"time", "level", "logger", "msg", "pid", ...}``; ``time`` in RFC 3339 UTC."""

    def __init__(self) -> None:
        super().__init__(FIELDS, rename_fields=RENAMES)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        second, millis = divmod(int(record.created * 1000), 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)) + f".{millis:03d}Z"


def install(level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """One JSON handler on the root logger, to stderr; ours at ``level``, others WARNING."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(LineFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("mqlite").setLevel(level)
    logging.captureWarnings(True)

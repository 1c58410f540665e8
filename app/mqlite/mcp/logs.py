"""``mqlite-mcp``'s logs: JSON lines on stderr, in the broker's shape.

stdout is the protocol on stdio, so nothing else may ever write there: every handler
goes to stderr. Each line is ``{"time", "level", "logger", "msg", "pid", ...fields}``,
``time`` RFC 3339 UTC to the millisecond, as ``mqlite serve`` writes them (the shape is
``mqlite/jsonlines.py``, shared with the server package, which this one must not
import). Never a token, an argument or a result: ``forward`` logs names, codes and
durations only.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from mqlite.jsonlines import LineFormatter


def install(level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """One JSON handler on the root logger, to stderr; ours at ``level``, others WARNING."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(LineFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("mqlite").setLevel(level)
    logging.captureWarnings(True)

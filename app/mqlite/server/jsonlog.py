"""One format for every line ``mqlite serve`` writes: a JSON object per line.

A container appliance's stdout and stderr go to log shippers, which must be able to parse
every line. Each line is ``{"time", "level", "logger", "msg", "pid", ...fields}`` with
``time`` in RFC 3339 UTC to the millisecond (``2026-12-01T07:26:54.318Z``). The pieces:

- ``LineFormatter``: python-json-logger with that shape, for every handler we install;
- ``GunicornLogger``: gunicorn's logger class with that formatter, so the master's and
  the worker's own lines (boot, ``Worker (pid:N) was sent SIGKILL!``) are JSON; the
  uvicorn worker hands the same handlers to ``uvicorn.error``;
- ``install``: a JSON handler on the root logger (third-party warnings, ``py.warnings``),
  excepthooks that log an uncaught exception as ONE line, and ``ForeignLines`` around
  ``sys.stdout``/``sys.stderr``, which wraps any plain text a library prints there
  (gunicorn prints a few lines itself) into a JSON line instead of letting it through;
- ``write_line``: the startup banner and startup refusals, written in the same shape.

Only what bypasses Python's streams (a C library writing to fd 2, a fatal interpreter
error) can still produce a plain line.
"""

from __future__ import annotations

import logging
import sys
import threading
from types import TracebackType
from typing import Any, TextIO, cast

from gunicorn import glogging
from pythonjsonlogger.core import RESERVED_ATTRS

from mqlite import jsonlines

# uvicorn adds an ANSI-coloured copy of some messages for terminals: not for a log shipper.
DROPPED = (*RESERVED_ATTRS, "color_message")
# What every line LineFormatter writes starts with: ForeignLines lets these through as is.
OWN_PREFIX = '{"time": "'


class LineFormatter(jsonlines.LineFormatter):
    """The shared line shape (``mqlite/jsonlines.py``) without uvicorn's coloured copy."""

    def __init__(self) -> None:
        super().__init__(reserved_attrs=DROPPED)


FORMATTER = LineFormatter()


def write_line(
    stream: TextIO,
    msg: str,
    *,
    level: int = logging.INFO,
    logger: str = "mqlite.serve",
    **fields: Any,
) -> None:
    """One JSON line written directly (the banner, a refusal before logging is set up)."""
    record = logging.makeLogRecord(
        {"name": logger, "levelno": level, "levelname": logging.getLevelName(level), "msg": msg}
    )
    record.__dict__.update(fields)
    target = raw(stream)
    target.write(FORMATTER.format(record) + "\n")
    target.flush()


class GunicornLogger(glogging.Logger):  # type: ignore[misc]
    """gunicorn's logger with every handler it installs formatted as JSON lines."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(FORMATTER)
                if isinstance(handler, logging.StreamHandler):
                    handler.setStream(raw(handler.stream))


class ForeignLines:
    """A text stream that turns every line not written by LineFormatter into a JSON line.

    It buffers to the end of a line, so ``print(a, b)`` and a multi-part write make one
    line; blank lines are dropped. Our own handlers write to the wrapped stream directly
    (``raw``), so the access log never pays for this check.
    """

    def __init__(self, target: TextIO, logger: str, level: int) -> None:
        self.target = target
        self._logger, self._level = logger, level
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            if "\n" not in self._pending:
                return len(text)
            *lines, self._pending = self._pending.split("\n")
        for line in lines:
            if line.startswith(OWN_PREFIX):
                self.target.write(line + "\n")
            elif line.strip():
                write_line(self.target, line.rstrip(), level=self._level, logger=self._logger)
        self.target.flush()
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def fileno(self) -> int:
        return self.target.fileno()

    def isatty(self) -> bool:
        return self.target.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, errors, buffer, ...
        return getattr(self.target, name)


def raw(stream: Any) -> TextIO:
    """The stream under a ``ForeignLines`` wrapper (or the stream itself)."""
    return cast(TextIO, stream.target if isinstance(stream, ForeignLines) else stream)


def _log_uncaught(
    kind: type[BaseException], exc: BaseException, tb: TracebackType | None, where: str
) -> None:
    logging.getLogger("mqlite.serve").critical(
        f"uncaught exception {where}", exc_info=(kind, exc, tb)
    )


def install(level: str) -> None:
    """Make this process (the gunicorn master, and so the worker it forks) JSON-only."""
    if not isinstance(sys.stdout, ForeignLines):
        sys.stdout = cast(TextIO, ForeignLines(sys.stdout, "stdout", logging.INFO))
    if not isinstance(sys.stderr, ForeignLines):
        sys.stderr = cast(TextIO, ForeignLines(sys.stderr, "stderr", logging.WARNING))
    handler = logging.StreamHandler(raw(sys.stderr))
    handler.setFormatter(FORMATTER)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)  # third-party chatter below WARNING stays out
    logging.getLogger("mqlite").setLevel(level)
    logging.captureWarnings(True)

    def excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        _log_uncaught(kind, exc, tb, "in the main thread")

    def thread_excepthook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            name = args.thread.name if args.thread is not None else "?"
            _log_uncaught(args.exc_type, args.exc_value, args.exc_traceback, f"in thread {name}")

    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook

"""The private diagnostic log (observability, "Private diagnostic log"): the
``mqlite.diagnostics`` events as JSON lines in a file of their own, beyond the platform's
stderr retention.

- Opt-in (``--diagnostic-log PATH`` / ``MQLITE_DIAGNOSTIC_LOG``); ``check`` runs in the
  master before anything starts, so a bad path fails startup naming the variable.
- Mode 0600, appended across restarts, one ``fsync`` per record; rotation at 4 MiB into
  ``.1`` .. ``.3`` (newest first): at most 16 MiB retained.
- Written on its own thread (``QueueHandler``): the engine emits these events while it
  holds the writer, which must never wait for a disk sync.
- A failing write keeps the event on stderr (the same logger writes there) and adds one
  warning per failure streak.
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import queue
import threading

from mqlite import errors
from mqlite.server.jsonlog import FORMATTER

ROTATE_BYTES = 4 * 1024 * 1024
ARCHIVES = 3
VARIABLE = "MQLITE_DIAGNOSTIC_LOG"


def check(path: str) -> None:
    """Refuse a path whose parent is missing or that cannot be opened for appending."""
    parent = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(parent):
        raise errors.InvalidArgument(
            f"{VARIABLE}/--diagnostic-log={path!r}: the directory {parent!r} does not exist"
        )
    try:
        os.close(_open(path))
    except OSError as exc:
        raise errors.InvalidArgument(
            f"{VARIABLE}/--diagnostic-log={path!r}: cannot open it ({exc.strerror})"
        ) from None


def _open(path: str) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    return fd


class DiagnosticFile(logging.Handler):
    """Appends each record as one JSON line and syncs it; rotates by size."""

    def __init__(self, path: str) -> None:
        super().__init__(logging.INFO)
        self.path = path
        self.setFormatter(FORMATTER)
        self._fd = _open(path)
        self._failing = False

    def emit(self, record: logging.LogRecord) -> None:
        line = (self.format(record) + "\n").encode("utf-8", "replace")
        try:
            if os.fstat(self._fd).st_size + len(line) > ROTATE_BYTES:
                self._rotate()
            os.write(self._fd, line)
            os.fsync(self._fd)
            self._failing = False
        except OSError as exc:
            if not self._failing:  # one warning per streak; the event itself is on stderr
                self._failing = True
                logging.getLogger("mqlite.serve").warning(
                    "cannot write the diagnostic log; events stay on stderr only",
                    extra={"path": self.path, "error": exc.strerror},
                )

    def _rotate(self) -> None:
        os.close(self._fd)
        for n in range(ARCHIVES - 1, 0, -1):
            if os.path.exists(f"{self.path}.{n}"):
                os.replace(f"{self.path}.{n}", f"{self.path}.{n + 1}")
        os.replace(self.path, f"{self.path}.1")
        self._fd = _open(self.path)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
        super().close()


class DiagnosticLog:
    """The file handler behind a queue, attached to the ``mqlite.diagnostics`` logger."""

    def __init__(self, path: str) -> None:
        self.file = DiagnosticFile(path)
        self._queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self._handler = logging.handlers.QueueHandler(self._queue)
        self._listener = logging.handlers.QueueListener(self._queue, self.file)
        self._lock = threading.Lock()

    @classmethod
    def attach(cls, path: str) -> DiagnosticLog:
        log = cls(path)
        logging.getLogger("mqlite.diagnostics").addHandler(log._handler)
        log._listener.start()
        return log

    def close(self) -> None:
        """Write what is queued, then detach (the broker is stopping)."""
        with self._lock:
            logging.getLogger("mqlite.diagnostics").removeHandler(self._handler)
            self._listener.stop()
            self.file.close()

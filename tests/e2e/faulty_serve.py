"""``mqlite serve`` with the measured store's fault seam armed by a trigger file: while
the file named by ``FAULTY_SERVE_TRIGGER`` exists, every storage operation of the broker
fails as an unreadable disk does (SQLite's ``SQLITE_IOERR``, raised where the driver would
raise it); removing the file restores the database. ``FAULTY_SERVE_SLOW_TRIGGER`` (below)
makes the writer slow instead. The broker is otherwise the real one (gunicorn master,
uvicorn worker: the seam is set before the fork, so the worker has it).

Used by the e2e and real-stack tests: ``python tests/e2e/faulty_serve.py --addr ...``.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time

from mqlite.cli.main import main
from mqlite.engine.measured_store import MeasuredStore

TRIGGER = os.environ["FAULTY_SERVE_TRIGGER"]
SQLITE_IOERR = 10


# Optional: a transaction that starts while the file named by FAULTY_SERVE_SLOW_TRIGGER
# exists holds the writer until the file is removed (at most HOLD_S), as a long Purge
# would; it first creates ``<trigger>.held`` so the test knows the writer is taken.
SLOW_TRIGGER = os.environ.get("FAULTY_SERVE_SLOW_TRIGGER", "")
HOLD_S = 30.0


def unreadable(kind: str) -> None:
    if kind == "transaction" and SLOW_TRIGGER and os.path.exists(SLOW_TRIGGER):
        with open(SLOW_TRIGGER + ".held", "w"):
            pass
        deadline = time.monotonic() + HOLD_S
        while os.path.exists(SLOW_TRIGGER) and time.monotonic() < deadline:
            time.sleep(0.01)
    if os.path.exists(TRIGGER):
        exc = sqlite3.OperationalError(f"disk I/O error (test fault on {kind})")
        exc.sqlite_errorcode = SQLITE_IOERR  # type: ignore[attr-defined]
        exc.sqlite_errorname = "SQLITE_IOERR"  # type: ignore[attr-defined]
        raise exc


if __name__ == "__main__":
    MeasuredStore.fault = staticmethod(unreadable)
    sys.exit(main(["serve", *sys.argv[1:]]))

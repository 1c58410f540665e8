"""sqlite3 exceptions become ``MQLiteError``s at the engine's edge.

The driver's exceptions never reach a caller: each is classified into a bounded category
(the spec's storage error vocabulary) and raised as ``StorageError`` with a generated,
human explanation; the original exception stays attached as ``__cause__`` for the log,
never in the message a client sees.
"""

from __future__ import annotations

import sqlite3

from mqlite import errors
from mqlite.engine.remote import RemoteUnreachable

# Primary result codes (the low byte of an extended code), sqlite.org/rescode.html.
_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN = 10, 11, 13, 14
_SQLITE_NOTADB = 26

_CATEGORY = {
    _SQLITE_FULL: "full",
    _SQLITE_BUSY: "busy",
    _SQLITE_LOCKED: "busy",
    _SQLITE_CORRUPT: "corrupt",
    _SQLITE_NOTADB: "corrupt",
    _SQLITE_IOERR: "io",
    _SQLITE_CANTOPEN: "io",
    _SQLITE_PERM: "io",
    _SQLITE_READONLY: "io",
}

_EXPLANATION = {
    "full": "the database or its disk is full",
    "busy": "the database is busy (locked by another connection)",
    "corrupt": "the database file is damaged or is not an mqlite database",
    "io": "the database file could not be read or written",
    "closed": "the database connection is closed",
    "other": "the database failed to complete the operation",
}


def category(exc: sqlite3.Error) -> str:
    """The bounded storage category of a driver exception."""
    if isinstance(exc, sqlite3.ProgrammingError) and "closed" in str(exc):
        return "closed"
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return _CATEGORY.get(code & 0xFF, "other")
    return "other"


def translate(exc: sqlite3.Error) -> errors.MQLiteError:
    """The error to raise in place of ``exc`` (``raise ... from exc``): ``StorageFull``
    (503, retryable) for a full disk, ``StorageUnreachable`` (503, retryable) for a remote
    server that could not be reached, else ``StorageError`` (500) with its category."""
    cat = category(exc)
    err: errors.MQLiteError
    if isinstance(exc, RemoteUnreachable):
        err = errors.StorageUnreachable(
            f"{exc}; nothing was committed (retry later: the remote store retried what "
            "was safe to retry)"
        )
    elif cat == "full":
        err = errors.StorageFull(
            "the database's disk is full: nothing was written; consumers can still drain "
            "(retry later, or free disk space)"
        )
    else:
        err = errors.StorageError(f"storage error: {_EXPLANATION[cat]}", category=cat)
    err.__cause__ = exc
    return err

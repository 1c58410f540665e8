"""Failure evidence: bounded categories, generated explanations, opaque fingerprints, and
the structured ``mqlite.diagnostics`` events (observability, "Maintenance failure
diagnosis" and "Private diagnostic log").

Observe and /metrics carry only what is generated here (a category, an explanation made
from it, a fingerprint); the raw driver text goes only into the private log events, with
common credentials and URLs redacted and its length bounded. The events are plain
``logging`` records: the broker writes them to stderr as JSON and, when configured, to the
private diagnostic file; an embedded application routes the logger wherever it likes.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sqlite3
from dataclasses import dataclass

from mqlite import errors
from mqlite.engine.storage_errors import category as driver_category

log = logging.getLogger("mqlite.diagnostics")

MAX_DETAIL_CHARS = 300

# Interruptions: the engine was closing or the caller went away. Not failures.
INTERRUPTIONS = (errors.Closed, errors.Canceled)

EXPLANATIONS = {
    "full": "the database or its disk is full",
    "busy": "the database is busy (locked by another connection)",
    "corrupt": "the database file is damaged or is not an mqlite database",
    "io": "the database file could not be read or written",
    "closed": "the database connection is closed",
    "canceled": "the operation was canceled before it completed",
    "connection": "the database connection failed",
    "application": "the operation was refused by application logic",
    "outcome_unknown": "the commit may or may not have happened",
    "other": "the database failed to complete the operation",
}

_REDACTIONS = (
    (re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+"), "<url>"),
    (re.compile(r"(?i)\bbearer\s+\S+"), "Bearer <redacted>"),
    (re.compile(r"\bmqk_[A-Za-z0-9_]+"), "<token>"),
    (
        re.compile(r"(?i)\b(password|passwd|pwd|secret|token|api[_-]?key|auth)(\s*[=:]\s*)\S+"),
        r"\1\2<redacted>",
    ),
)


@dataclass(frozen=True, slots=True)
class Failure:
    """A classified failure: what Observe may show, plus the private detail."""

    category: str
    explanation: str
    fingerprint: str
    sqlite_code: int | None
    detail: str  # redacted, bounded: for the private log only


def classify(exc: BaseException) -> str:
    """The bounded category of any exception raised by a storage operation."""
    if isinstance(exc, errors.StorageError):
        return exc.category if exc.category in EXPLANATIONS else "other"
    if isinstance(exc, sqlite3.Error):
        return driver_category(exc)
    if isinstance(exc, errors.Closed):
        return "closed"
    if isinstance(exc, errors.Canceled):
        return "canceled"
    if isinstance(exc, errors.OutcomeUnknown):
        return "outcome_unknown"
    return "other"


def sqlite_code_of(exc: BaseException) -> int | None:
    seen: BaseException | None = exc
    while seen is not None:
        code = getattr(seen, "sqlite_errorcode", None)
        if isinstance(code, int):
            return code
        seen = seen.__cause__
    return None


def redact(text: str) -> str:
    """``text`` with URLs and common credentials replaced, at most MAX_DETAIL_CHARS."""
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    text = " ".join(text.split())
    return text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 1] + "…"


def failure(where: str, exc: BaseException) -> Failure:
    """Classify ``exc`` raised at ``where`` (``locks/reap``, ``read``, ...)."""
    cat = classify(exc)
    code = sqlite_code_of(exc)
    root = exc.__cause__ if exc.__cause__ is not None else exc
    basis = f"{where}|{cat}|{type(root).__name__}|{code}"
    return Failure(
        category=cat,
        explanation=EXPLANATIONS[cat],
        fingerprint=hashlib.sha256(basis.encode()).hexdigest()[:16],
        sqlite_code=code,
        detail=redact(f"{type(root).__name__}: {root}"),
    )


# Set on a driver error raised by the application's own statement in ``Engine.tx()``: the
# block's failure is then the application's (an IntegrityError of its INSERT), and the log
# says so instead of blaming storage.
APPLICATION_MARK = "mqlite_application_statement"


def mark_application(exc: sqlite3.Error) -> sqlite3.Error:
    setattr(exc, APPLICATION_MARK, True)
    return exc


def is_application(exc: BaseException) -> bool:
    return bool(getattr(exc, APPLICATION_MARK, False))


def emit(event: str, msg: str, level: int = logging.WARNING, **fields: object) -> None:
    """One structured diagnostic event (``event`` is one of the five kinds)."""
    log.log(level, msg, extra={"event": event, **fields})

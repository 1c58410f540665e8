"""The one error vocabulary: exception class <-> wire code <-> HTTP status.

Every error mqlite raises is an ``MQLiteError`` subclass carrying the wire ``code`` and
``http_status`` of the spec's error table (api-reference "Errors"). The class docstring is
the default message, so ``raise LockLost()`` says something useful on its own. The HTTP
client re-raises the same classes from the wire code, so embedded and remote callers
handle errors identically. Where a subclass shares its parent's wire code, its ``reason``
(sent beside the code, additive to the original's envelope) names it: clients that know
the reason get the subclass, others (and envelopes without one) get the parent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class MQLiteError(Exception):
    """mqlite error."""

    code: ClassVar[str] = "internal"
    http_status: ClassVar[int] = 500
    reason: ClassVar[str] = ""  # "" = the class BY_CODE maps its code to

    def __init__(self, message: str | None = None) -> None:
        self.message = message or (self.__doc__ or self.code).strip().splitlines()[0]
        super().__init__(self.message)


class InvalidArgument(MQLiteError):
    """invalid argument."""

    code = "invalid_argument"
    http_status = 400


class GroupRequired(MQLiteError):
    """group_id is required on every send to a group_fifo queue."""

    code = "group_required"
    http_status = 400


class Unauthenticated(MQLiteError):
    """missing or invalid Bearer token."""

    code = "unauthenticated"
    http_status = 401


class PermissionDenied(MQLiteError):
    """the credential lacks the permission this operation requires."""

    code = "permission_denied"
    http_status = 403


class NotFound(MQLiteError):
    """not found."""

    code = "not_found"
    http_status = 404


class QueueNotFound(NotFound):
    """queue not found."""

    reason = "queue_not_found"


class DedupConflict(MQLiteError):
    """a message with this message_id and a different body is already in the dedup window."""

    code = "already_exists"
    http_status = 409


class NameConflict(MQLiteError):
    """the name is already used by a queue, subscription or topic of another kind."""

    code = "name_conflict"
    http_status = 409


class QueueConfigDiffers(NameConflict):
    """the queue exists with another configuration; ensure_queue(strict=True) left it as is."""

    reason = "queue_config_differs"


class PushAttached(NameConflict):
    """the queue has a push target: the broker is its consumer, so Receive is refused."""

    reason = "queue_has_push"


class KeyConflict(MQLiteError):
    """an access key with this id or token digest is already registered."""

    code = "key_conflict"
    http_status = 409


class LockLost(MQLiteError):
    """lock lost: the lock token is wrong, expired, or the message was already settled."""

    code = "lock_lost"
    http_status = 409


class QueueChanged(MQLiteError):
    """the queue name now identifies a different generation; nothing was deleted."""

    code = "queue_changed"
    http_status = 409


class QueueNotEmpty(MQLiteError):
    """the queue still holds messages (in some state); drain or settle them first."""

    code = "queue_not_empty"
    http_status = 409


class UnsupportedMediaType(InvalidArgument):
    """an RPC body must be sent with Content-Type: application/json."""

    http_status = 415
    reason = "unsupported_media_type"


class HeadersTooLarge(InvalidArgument):
    """the request line and headers are larger than the broker accepts."""

    http_status = 431
    reason = "headers_too_large"


class MessageTooLarge(MQLiteError):
    """message body is larger than the configured maximum."""

    code = "message_too_large"
    http_status = 413


class Canceled(MQLiteError):
    """the request was canceled by the client."""

    code = "canceled"
    http_status = 499


class RequestTimeout(Canceled):
    """the request was not received in time; the broker stopped waiting for it."""

    http_status = 408
    reason = "request_timeout"


class OutcomeUnknown(MQLiteError):
    """a remote write lost its commit acknowledgement: it may or may not have applied."""

    code = "outcome_unknown"
    http_status = 503


class Unavailable(MQLiteError):
    """the broker cannot do this right now; retry later."""

    code = "unavailable"
    http_status = 503


class ResourceExhausted(MQLiteError):
    """the caller's rate limit is spent: nothing was done; retry after ``retry_after_s``
    seconds (the ``Retry-After`` header)."""

    code = "resource_exhausted"
    http_status = 429

    def __init__(self, message: str | None = None, *, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Unimplemented(MQLiteError):
    """method not implemented (POST required)."""

    code = "unimplemented"
    http_status = 405


class Internal(MQLiteError):
    """internal error."""

    code = "internal"
    http_status = 500


class StorageError(Internal):
    """the database failed to complete the operation."""

    def __init__(self, message: str | None = None, *, category: str = "other") -> None:
        super().__init__(message)
        self.category = category  # bounded: full, busy, corrupt, io, closed, other


class StorageFull(Unavailable, StorageError):
    """the database's disk is full or below its free-space floor: sends are refused until
    space is freed, while receiving, settling and purging keep working; retry later.

    A ``StorageError`` (``except StorageError`` sees every storage failure) whose wire form
    is the retryable ``503 unavailable`` with reason ``storage_full``."""

    reason = "storage_full"

    def __init__(self, message: str | None = None) -> None:
        StorageError.__init__(self, message, category="full")


class StorageUnreachable(Unavailable, StorageError):
    """the remote database (a libSQL server) could not be reached or stopped answering:
    nothing was committed (a lost COMMIT acknowledgement is ``OutcomeUnknown`` instead);
    retry later.

    A ``StorageError`` whose wire form is the retryable ``503 unavailable`` with reason
    ``storage_unreachable``; only a remote store raises it."""

    reason = "storage_unreachable"

    def __init__(self, message: str | None = None) -> None:
        StorageError.__init__(self, message, category="io")


# Errors that only exist in-process (they never cross the wire as their own code; a
# broker that hits them at startup refuses to start instead).
class DBLocked(MQLiteError):
    """database is locked by another mqlite process (one writer per database file)."""

    code = "internal"
    http_status = 500


class SchemaVersionMismatch(MQLiteError):
    """database schema version is not one this mqlite opens or migrates (token 5 is migrated)."""

    code = "internal"
    http_status = 500


class DatabaseNotWritable(MQLiteError):
    """the database file or its directory cannot be written by this process."""

    code = "internal"
    http_status = 500


class Closed(MQLiteError):
    """the engine is closed."""

    code = "internal"
    http_status = 500


class BackupFailed(MQLiteError):
    """the snapshot could not be taken, verified or restored."""

    code = "internal"
    http_status = 500


class UnsupportedSQLite(MQLiteError):
    """the SQLite library is too old: mqlite needs SQLite 3.37 or newer (STRICT, RETURNING)."""

    code = "internal"
    http_status = 500


class NoLock:
    """The settler bound to a message that holds no lock (peeked, received-and-deleted):
    every settlement verb refuses with ``InvalidArgument``. Clients bind every message they
    return, so ``m.complete()`` on such a message fails the same way embedded and remote."""

    def _refuse(self, *args: object) -> Any:
        raise InvalidArgument("this message holds no lock to settle (peeked or receive-and-delete)")

    complete = abandon = reject = defer = renew = _refuse


NO_LOCK = NoLock()


def _wire_classes() -> Mapping[str, type[MQLiteError]]:
    """Map each wire code to the one class the HTTP client re-raises for it."""
    table: dict[str, type[MQLiteError]] = {}
    for cls in (
        InvalidArgument,
        GroupRequired,
        Unauthenticated,
        PermissionDenied,
        NotFound,
        DedupConflict,
        NameConflict,
        KeyConflict,
        LockLost,
        QueueChanged,
        QueueNotEmpty,
        MessageTooLarge,
        Canceled,
        OutcomeUnknown,
        Unavailable,
        Unimplemented,
        Internal,
        ResourceExhausted,
    ):
        assert cls.code not in table, f"duplicate wire code {cls.code}"
        table[cls.code] = cls
    return table


BY_CODE: Mapping[str, type[MQLiteError]] = _wire_classes()


def _reason_classes() -> Mapping[str, type[MQLiteError]]:
    """Map each ``reason`` to the subclass it names (a refinement of its code's class)."""
    table: dict[str, type[MQLiteError]] = {}
    for cls in (
        QueueNotFound,
        StorageFull,
        StorageUnreachable,
        UnsupportedMediaType,
        HeadersTooLarge,
        RequestTimeout,
        QueueConfigDiffers,
        PushAttached,
    ):
        assert cls.reason not in table, f"duplicate reason {cls.reason}"
        assert issubclass(cls, BY_CODE[cls.code]), f"{cls.__name__} must refine its code"
        table[cls.reason] = cls
    return table


BY_REASON: Mapping[str, type[MQLiteError]] = _reason_classes()

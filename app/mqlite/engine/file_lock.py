"""One writer per database FILE: whatever name reaches it.

Two locks, both non-blocking ``flock``s that the OS drops when the process dies:

- the sidecar ``<canonical path>.lock``, taken first, so a second opener fails fast even
  before the database file exists;
- the database file itself. ``flock`` belongs to an open file description and conflicts
  with every other one on the same inode, so a hard link, a bind mount or another spelling
  of the path cannot open a second writer (which would keep a second WAL for the same
  file and lose acknowledged writes).

Inside one process a second open is refused from a registry keyed by (device, inode)
BEFORE any descriptor on the file is opened: closing a descriptor drops every POSIX
(fcntl) lock the process holds on that inode, SQLite's own included. For the same reason
the descriptor on the database is closed only after SQLite's connection is.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading

from mqlite import errors

_open_inodes: set[tuple[int, int]] = set()
_registry = threading.Lock()


def _locked(what: str) -> errors.DBLocked:
    return errors.DBLocked(
        f"database is locked by another mqlite process ({what}); "
        "one writer per database: run one broker and connect to it"
    )


def _flock(fd: int, what: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise _locked(what) from None
    except BaseException:
        os.close(fd)
        raise


# What a file or directory without write permission (or on a read-only mount) raises.
NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


def not_writable(
    path: str, operation: str, exc: OSError | None = None, *, file: bool = False
) -> errors.DatabaseNotWritable:
    """One line naming the path, the operation and the fix (a read-only directory used to
    surface as a bare ``PermissionError`` traceback, or ``error: Permission denied``).
    ``file``: the file itself must be writable too, not only its directory."""
    reason = (exc.strerror if exc is not None else None) or "permission denied"
    directory = os.path.dirname(os.path.abspath(path)) or "."
    what = f"{path} and {directory}" if file else directory
    return errors.DatabaseNotWritable(
        f"cannot {operation} {path}: {reason.lower()}; make {what} writable by this "
        f"process (uid {os.getuid()}) or set MQLITE_DB=file:PATH to a writable directory"
    )


def check_directory(path: str) -> None:
    """The directory must exist and take new files: SQLite creates the WAL and shared
    memory files beside the database (a read-only one failed later as a bare storage
    error, naming no path)."""
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise errors.InvalidArgument(f"database directory does not exist: {directory}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise not_writable(path, "create files beside the database")


def _open(path: str, operation: str, flags: int) -> int:
    try:
        return os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno in NOT_WRITABLE:
            raise not_writable(path, operation, exc, file=os.path.exists(path)) from None
        raise


class DatabaseLock:
    """Held for the lifetime of a Store on a file; ``release`` after closing SQLite."""

    def __init__(self, path: str) -> None:
        check_directory(path)
        sidecar = _open(path + ".lock", "create the lock file", os.O_RDWR | os.O_CREAT)
        _flock(sidecar, path + ".lock")
        self._fds = [sidecar]
        self._inode: tuple[int, int] | None = None
        try:
            self._lock_database(path)
        except BaseException:
            self.release()
            raise

    def _lock_database(self, path: str) -> None:
        with _registry:
            if os.path.exists(path):
                st = os.stat(path)
                if (st.st_dev, st.st_ino) in _open_inodes:
                    raise _locked(f"{path} is already open in this process")
            fd = _open(path, "open the database", os.O_RDWR | os.O_CREAT)
            st = os.fstat(fd)
            inode = (st.st_dev, st.st_ino)
            if inode in _open_inodes:  # created between exists() and open(): same inode
                os.close(fd)
                raise _locked(f"{path} is already open in this process")
            _flock(fd, path)
            self._fds.append(fd)
            self._inode = inode
            _open_inodes.add(inode)

    def release(self) -> None:
        with _registry:
            if self._inode is not None:
                _open_inodes.discard(self._inode)
                self._inode = None
        fds, self._fds = self._fds, []
        for fd in reversed(fds):
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


def check_free(path: str) -> None:
    """Raise ``DBLocked`` if another process holds the database, ``DatabaseNotWritable``
    if this one could not write it (a pre-flight for serve; never called in a process
    that has the database open). Creates nothing: a start that fails later (the port is
    taken) must not leave an empty database and lock file behind."""
    check_directory(path)
    for target, operation in ((path + ".lock", "open the lock file"), (path, "open the database")):
        try:
            fd = _open(target, operation, os.O_RDWR)
        except FileNotFoundError:
            continue  # nobody can hold what does not exist
        _flock(fd, target)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

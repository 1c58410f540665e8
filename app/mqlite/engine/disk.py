"""Disk space: consumers must always be able to drain, even when producers filled the disk.

Two mechanisms, for a file database only:

- a **free-space floor**: a send is refused with ``StorageFull`` (503, retryable) while the
  filesystem has less than ``floor_bytes`` available, so producers stop before the disk is
  full and the room left is for claims, settlements and purges (which shrink the backlog);
- a **reserve** file ``<db>.reserve`` of ``reserve_bytes``, kept while space allows. When the
  disk fills anyway (another process wrote to it, or a burst raced the floor), the reserve
  is released at once -- at open, or when a write fails with SQLITE_FULL -- so WAL frames
  have somewhere to go and the broker can start and drain; it is recreated once the disk
  has room again. Both events are logged, once per streak.

Free space is read with ``statvfs`` at most every ``REFRESH_MS`` and decremented by what
sends enqueue in between, so the hot path does no system call per message.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from mqlite import defaults, errors

log = logging.getLogger("mqlite.engine")

REFRESH_MS = 250.0
CHUNK = 1 << 20
UNKNOWN = 1 << 62  # what "free space" is taken to be when statvfs cannot tell


@dataclass(frozen=True, slots=True)
class DiskLimits:
    """``floor_bytes``: sends are refused below it (0: never); ``reserve_bytes``: the size
    of the reserve file (0: none)."""

    floor_bytes: int = defaults.DISK_FLOOR_BYTES
    reserve_bytes: int = defaults.DISK_RESERVE_BYTES


class DiskGuard:
    def __init__(self, db_path: str, limits: DiskLimits, monotonic_ms: Callable[[], float]) -> None:
        self.directory = os.path.dirname(db_path) or "."
        self.reserve_path = db_path + ".reserve"
        self.floor_bytes = max(limits.floor_bytes, 0)
        self.reserve_bytes = max(limits.reserve_bytes, 0)
        self._monotonic_ms = monotonic_ms
        self._lock = threading.Lock()
        self._free = 0
        self._read_at = float("-inf")
        self._below_floor = False
        # Free pages inside the database file: room SQLite reuses before growing the file,
        # so it counts as free space (kept current by the maintenance loop, note_freelist).
        self._db_free = 0

    # -- what the engine asks -------------------------------------------------------------

    def check_send(self, nbytes: int) -> None:
        """Refuse a send that would take the filesystem below the floor."""
        if not self.floor_bytes:
            return
        with self._lock:
            # _available inlined for its common case (read less than REFRESH_MS ago).
            if self._monotonic_ms() - self._read_at < REFRESH_MS:
                free = self._free
            else:
                free = self._available()
            if free - nbytes < self.floor_bytes:
                if not self._below_floor:
                    self._below_floor = True
                    log.warning(
                        "free disk space is below the floor: sends are refused until space "
                        "is freed (consumers can still drain)",
                        extra={"free_bytes": free, "floor_bytes": self.floor_bytes},
                    )
                raise errors.StorageFull(
                    f"the database's disk has {free} bytes free, under the "
                    f"{self.floor_bytes}-byte floor kept for consumers: sends are refused "
                    "until space is freed (retry later)"
                )
            self._free = free - nbytes
            if self._below_floor:
                self._below_floor = False
                log.info("free disk space is back above the floor: sends are accepted again")

    def on_disk_full(self) -> None:
        """A write failed with SQLITE_FULL: release the reserve so the next writes fit."""
        self.release_reserve("a write found the disk full")
        with self._lock:
            self._read_at = float("-inf")

    def tend(self) -> None:
        """Maintenance: (re)create the reserve once there is comfortable room for it (the
        database's own free pages do not count here: the reserve needs filesystem room)."""
        if not self.reserve_bytes or os.path.exists(self.reserve_path):
            return
        try:
            st = os.statvfs(self.directory)
        except OSError:
            return
        if st.f_bavail * st.f_frsize >= self.floor_bytes + 2 * self.reserve_bytes:
            self._create_reserve()

    # -- the reserve ----------------------------------------------------------------------

    def release_reserve(self, why: str) -> bool:
        try:
            os.unlink(self.reserve_path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            log.error("could not release the disk reserve", extra={"error": str(exc)})
            return False
        log.warning(
            "released the disk reserve so consumers can drain",
            extra={"why": why, "reserve_bytes": self.reserve_bytes, "path": self.reserve_path},
        )
        return True

    def _create_reserve(self) -> None:
        tmp = f"{self.reserve_path}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                zeros = bytes(CHUNK)
                left = self.reserve_bytes
                while left > 0:  # written, not fallocated: a sparse file reserves nothing
                    left -= os.write(fd, zeros[: min(left, CHUNK)])
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.reserve_path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def _available(self) -> int:
        now = self._monotonic_ms()
        if now - self._read_at >= REFRESH_MS:
            try:
                st = os.statvfs(self.directory)
            except OSError:  # unknowable (the directory is gone): never block on a guess
                return UNKNOWN
            self._free = st.f_bavail * st.f_frsize + self._db_free
            self._read_at = now
        return self._free

    def note_freelist(self, free_bytes: int) -> None:
        """The database's free pages, in bytes (read by a maintenance pass on the writer)."""
        with self._lock:
            if free_bytes != self._db_free:
                self._db_free = free_bytes
                self._read_at = float("-inf")

    def open_on_a_full_disk(self) -> None:
        """Before the database opens: if the disk is (nearly) full, release the reserve,
        so creating the WAL and the shared-memory file cannot fail and the broker starts."""
        with self._lock:
            free = self._available()
        if free < self.floor_bytes or free < CHUNK:
            self.release_reserve("the disk was full when the database opened")

"""Where a DSN points (a local file, a remote libSQL server, or memory), apart from how a
store opens it: the CLI, ``serve``'s pre-flight and the facades parse DSNs without the
storage code. ``store.py`` re-exports these names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mqlite import errors
from mqlite.engine.remote import RemoteTarget, is_remote, parse_remote


@dataclass(frozen=True, slots=True)
class Location:
    """Where a DSN points: a local ``path``, a ``remote`` libSQL server, or neither
    (an in-memory database)."""

    path: str | None
    remote: RemoteTarget | None = None

    @property
    def is_memory(self) -> bool:
        return self.path is None and self.remote is None

    @property
    def is_remote(self) -> bool:
        return self.remote is not None

    @property
    def backend(self) -> str:
        if self.remote is not None:
            return "remote libSQL/Turso"
        return "memory" if self.path is None else "local file"

    @property
    def shown(self) -> str:
        """What Status shows: the path, ``:memory:``, or the masked remote host."""
        if self.remote is not None:
            return self.remote.masked
        return self.path or ":memory:"


def parse_dsn(dsn: str) -> Location:
    """Accept ``:memory:``/empty, ``file:<path>[?query]`` and a bare path.

    The query string is dropped: mqlite sets its own pragmas, so options smuggled in a DSN
    cannot weaken durability or the single-writer guard.
    """
    text = (dsn or "").strip()
    if is_remote(text):
        return Location(None, parse_remote(text))
    if text.startswith("file:"):
        text = text[len("file:") :]
    text = text.split("?", 1)[0]
    if text in ("", ":memory:"):
        return Location(None)
    return Location(os.path.realpath(os.path.abspath(os.path.expanduser(text))))


def require_file(location: Location, what: str) -> str:
    """The database file of ``location`` for a local-only operation (backup, vacuum,
    restore, checkpoint): refused, naming the reason, for memory and a remote server."""
    if location.remote is not None:
        raise errors.InvalidArgument(
            f"{what} is a local-file operation: the remote libSQL server "
            f"{location.remote.masked} owns its storage (use the provider's backups and "
            "compaction)"
        )
    if location.path is None:
        raise errors.InvalidArgument(f"{what} needs a database file, not :memory:")
    return location.path

"""Which broker a kombu URL names, and the one mqlite client per kombu connection.

- ``mqlite+http://host:port`` / ``mqlite+https://…``: a remote client (``mqlite.connect``).
  The token comes from the ``token`` transport option, else ``MQLITE_TOKEN``; a URL that
  carries one is refused, because Celery prints the broker URL in its banner and logs
  (kombu masks only an AMQP-style password, not a ``+`` transport's URL).
- ``mqlite:///relative/mq.db``, ``mqlite:////absolute/mq.db`` (the SQLAlchemy spelling
  Celery users know from ``db+sqlite://``), or ``mqlite+file://PATH``: the embedded broker.

An embedded database admits one process (the engine holds an OS lock on it), and one
client within it: kombu opens many connections per process (consumer, producer pool,
remote control, events), so they share one ``EmbeddedClient`` per file, reference
counted, and a forked child (a prefork worker's pool process) never reuses its parent's:
it opens its own, which fails with ``DBLocked`` while the parent holds the file.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mqlite import errors
from mqlite.sdk.protocol import Client

EMBEDDED_ONE_PROCESS = (
    "; the mqlite:// (embedded) transport serves one process: a worker with "
    "--pool=solo or --pool=threads publishing its own tasks, or a producer while no worker "
    "runs. Run `mqlite serve` and use mqlite+http:// when several processes share a broker"
)


@dataclass(frozen=True, slots=True)
class Target:
    """Where a kombu connection goes: ``endpoint`` (remote) or ``dsn`` (embedded)."""

    endpoint: str = ""
    dsn: str = ""

    @property
    def remote(self) -> bool:
        return bool(self.endpoint)

    def describe(self) -> str:
        """For logs and reprs: never a credential (none can be in a Target's URL)."""
        return self.endpoint or self.dsn


def target(hostname: str | None, virtual_host: str | None) -> Target:
    """Parse what kombu split the broker URL into (``Connection.hostname``/``virtual_host``:
    the ``+`` form puts the inner URL in ``hostname``)."""
    host = hostname or ""
    if "://" in host:
        parts = urlsplit(host)
        if parts.scheme in ("http", "https"):
            if parts.username is not None or parts.password is not None:
                raise errors.InvalidArgument(
                    "the broker URL must not carry the token (Celery logs the URL): set "
                    "MQLITE_TOKEN or broker_transport_options={'token': ...}"
                )
            return Target(endpoint=host)
        if parts.scheme == "file":
            return Target(dsn="file:" + host.split("://", 1)[1])
        raise errors.InvalidArgument(
            f"unsupported broker URL scheme mqlite+{parts.scheme}://: use mqlite+http://, "
            "mqlite+https:// or mqlite:///path/to/mq.db"
        )
    if host and host != "localhost":
        raise errors.InvalidArgument(
            f"mqlite://{host}/... names a host: use mqlite+http://{host}:6754 for a broker, "
            "or mqlite:///path/to/mq.db (no host) for an embedded database"
        )
    path = (virtual_host or "").strip()
    if path in ("", "/"):
        raise errors.InvalidArgument(
            "mqlite:// needs a database path: mqlite:///mq.db (relative) or "
            "mqlite:////srv/app/mq.db (absolute)"
        )
    return Target(dsn="file:" + path)


def resolve_token(options: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    token = options.get("token")
    if token is None:
        token = environ.get("MQLITE_TOKEN", "").strip() or None
    if token is not None and not isinstance(token, str):
        raise errors.InvalidArgument("the token transport option must be a string")
    return token


# -- embedded: one client per file per process ---------------------------------------------


@dataclass
class _Shared:
    client: Client
    pid: int
    users: int


_shared: dict[str, _Shared] = {}
_shared_lock = threading.Lock()


def _key(dsn: str) -> str:
    from mqlite.sdk.embedded import database_path

    return database_path(dsn) or dsn


def acquire_embedded(dsn: str) -> Client:
    """The process's client of ``dsn``, opened on first use (with the maintenance loops,
    which activate scheduled messages and reap expired locks)."""
    import mqlite

    key = _key(dsn)
    pid = os.getpid()
    with _shared_lock:
        entry = _shared.get(key)
        if entry is None or entry.pid != pid:  # a forked child: the parent's is not ours
            quiet = logging.getLogger("apscheduler")
            if quiet.level == logging.NOTSET:  # its per-second INFO lines, at Celery's -l INFO
                quiet.setLevel(logging.WARNING)
            try:
                client = mqlite.open_embedded(dsn)
            except errors.DBLocked as exc:
                raise errors.DBLocked(exc.message + EMBEDDED_ONE_PROCESS) from exc
            entry = _shared[key] = _Shared(client, pid, 0)
        entry.users += 1
        return entry.client


def release_embedded(dsn: str) -> None:
    key = _key(dsn)
    with _shared_lock:
        entry = _shared.get(key)
        if entry is None or entry.pid != os.getpid():
            return
        entry.users -= 1
        if entry.users > 0:
            return
        del _shared[key]
    entry.client.close()


def open_remote(endpoint: str, token: str | None, timeout_s: float) -> Client:
    import mqlite

    return mqlite.connect(endpoint, token if token is not None else "", timeout=timeout_s)

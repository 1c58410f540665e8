"""The embedded client: the engine in your process, plus its background maintenance.

``open_embedded`` is the public entry point. The client IS the engine (same methods,
same exceptions) with the APScheduler loops attached when ``background=True``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mqlite import defaults
from mqlite.clock import Clock
from mqlite.config import sync_from_env
from mqlite.engine import SCHEMA_VERSION, DLQBounds, Engine
from mqlite.scheduling import MaintenanceScheduler
from mqlite.wire import StatusResponse

if TYPE_CHECKING:
    from mqlite.sdk.protocol import Client


__all__ = ["SCHEMA_VERSION", "EmbeddedClient", "open_embedded"]


class EmbeddedClient(Engine):
    """An in-process broker on one SQLite file (or ``:memory:``)."""

    def __init__(
        self,
        dsn: str,
        *,
        clock: Clock | None = None,
        background: bool = True,
        sync: str | None = None,
        max_message_bytes: int = defaults.MAX_MESSAGE_BYTES,
        dlq_max_age_ms: int = 0,
        dlq_max_count: int = 0,
        dlq_max_bytes: int = 0,
    ) -> None:
        if sync is None:
            sync = sync_from_env(os.environ)
        super().__init__(
            dsn,
            clock=clock,
            sync=sync,
            max_message_bytes=max_message_bytes,
            dlq_defaults=DLQBounds(dlq_max_age_ms, dlq_max_count, dlq_max_bytes),
        )
        self._started_ms = self.clock.now_ms()
        self._scheduler: MaintenanceScheduler | None = None
        if background:
            self._scheduler = MaintenanceScheduler(self)
            self._scheduler.start()

    def status(self) -> StatusResponse:  # type: ignore[override]
        """The same ``StatusResponse`` a broker answers: ``auth`` is False (in-process
        access is trusted) and ``uptime_ms`` counts from this client's opening."""
        from mqlite import __version__

        snapshot = super().status()
        ping = snapshot.pop("ping_ms")
        return StatusResponse(
            version=__version__,
            uptime_ms=max(self.clock.now_ms() - self._started_ms, 0),
            auth=False,
            ping_ms=round(ping) if isinstance(ping, int | float) else -1,
            **snapshot,  # type: ignore[arg-type]
        )

    def close(self) -> None:
        """Stop the loops, wake long polls, wait for in-flight work, checkpoint and close."""
        if self._scheduler is not None:
            self.notifier.close()
            self._scheduler.stop()
            self._scheduler = None
        super().close()

    def __enter__(self) -> EmbeddedClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_embedded(dsn: str = "file:./mq.db", **options: object) -> EmbeddedClient:
    """Open (creating if needed) a broker database in this process.

    Options: ``clock``, ``background`` (default True), ``sync`` (NORMAL/FULL/OFF/EXTRA;
    default from ``MQLITE_SYNC`` or NORMAL), ``max_message_bytes``, ``dlq_max_age_ms``,
    ``dlq_max_count``, ``dlq_max_bytes`` (engine-default DLQ bounds, 0 = unbounded).
    """
    return EmbeddedClient(dsn, **options)  # type: ignore[arg-type]


if TYPE_CHECKING:

    def _conforms(c: EmbeddedClient) -> Client:
        return c

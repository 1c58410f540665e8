"""The only APScheduler import: runs the engine's maintenance passes on the spec's cadences.

Reaper, scheduler and cron firing every 1 s, TTL sweep every 10 s, janitors
(dedup/receipts/attempts, DLQ retention, free-page reclaim) every 60 s; each first fires one
interval after start.
One worker thread: passes serialize on the single writer anyway, and one thread keeps a
slow pass from piling up copies of itself (max_instances=1, coalesce).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from mqlite import defaults, errors

if TYPE_CHECKING:
    from mqlite.push import PushDispatcher

log = logging.getLogger("mqlite.maintenance")

T = TypeVar("T")


class Passes(Protocol):
    """What the scheduler uses of the engine: its maintenance part
    (``engine.maintenance``), never the store, the writer or the notifier themselves."""

    def reap_locks(self) -> Counter[str]: ...
    def activate_scheduled(self) -> Counter[str]: ...
    def expire_ttl(self) -> int: ...
    def run_janitors(self) -> tuple[int, int, int, int, int]: ...
    def reclaim_pass(self) -> int: ...
    def fire_schedules(self) -> int: ...
    def renew_lease(self) -> bool: ...
    def tend_disk(self) -> None: ...
    def on_writer(self, fn: Callable[[], T]) -> T: ...
    def enable(self, tasks: Sequence[str]) -> None: ...
    @property
    def leased(self) -> bool: ...
    @property
    def lease_lost(self) -> bool: ...
    @property
    def on_file(self) -> bool: ...


class MaintenanceScheduler:
    def __init__(
        self,
        engine: Passes,
        on_lease_lost: Callable[[errors.DBLocked], None] | None = None,
        push: PushDispatcher | None = None,
    ) -> None:
        self._engine = engine
        self._on_lease_lost = on_lease_lost
        self._lease_reported = False
        self._scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(1)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            timezone="UTC",
        )
        self._add("reap_locks", engine.reap_locks, defaults.REAPER_INTERVAL_MS)
        self._add("activate_scheduled", engine.activate_scheduled, defaults.SCHEDULER_INTERVAL_MS)
        self._add("expire_ttl", engine.expire_ttl, defaults.TTL_INTERVAL_MS)
        self._add("janitors", engine.run_janitors, defaults.JANITOR_INTERVAL_MS)
        self._add("reclaim_free_pages", engine.reclaim_pass, defaults.JANITOR_INTERVAL_MS)
        # Cron slots (engine/schedule_firing.py): off the writer, which the pass takes per batch
        # of due schedules, so producers interleave with a large due minute.
        self._add("fire_schedules", engine.fire_schedules, defaults.CRON_INTERVAL_MS, writer=False)
        if engine.leased:  # one broker per remote database (lease.py)
            self._add("renew_lease", self._renew_lease, defaults.LEASE_RENEW_INTERVAL_MS)
        # Off the writer: recreating the disk reserve writes a file of reserve_bytes.
        self._add("tend_disk", engine.tend_disk, defaults.DISK_TEND_INTERVAL_MS, writer=False)
        # What Observe reports as enabled: every task this scheduler runs (reclaim only
        # for a database file: in memory it does not apply).
        self._tasks = ["locks", "scheduled", "ttl", "dedup", "receipts", "retention"]
        # Push delivery (docs/push.md): its own thread and event loop, beside these. Built
        # by the caller, which holds the whole engine (this scheduler sees only its passes).
        self.push = push
        if engine.on_file:
            self._tasks.append("reclaim")

    def _add(self, name: str, fn: Callable[[], Any], every_ms: int, writer: bool = True) -> None:
        on_writer = self._engine.on_writer

        def run() -> None:
            try:
                if writer:
                    on_writer(fn)  # passes run on the writer thread, batched with other work
                else:
                    fn()
            except errors.Closed:
                pass  # shutting down: the engine refused new work
            except errors.MQLiteError:
                # Recorded and reported already (Observe's maintenance, the
                # maintenance.failure event); retried next tick, never fatal.
                log.debug("maintenance pass failed", extra={"pass": name}, exc_info=True)
            except Exception:  # a failed pass is logged and retried next tick, never fatal
                log.exception("maintenance pass failed", extra={"pass": name})

        self._scheduler.add_job(run, "interval", seconds=every_ms / 1000.0, id=name, name=name)

    def _renew_lease(self) -> None:
        """A renewal that finds another holder: logged, and the host told (``serve``
        exits); the store already refuses every write. A failed exchange is retried at
        the next tick (two can fail before the lease lapses)."""
        try:
            self._engine.renew_lease()
        except errors.DBLocked as exc:
            if not self._engine.lease_lost:
                raise
            if not self._lease_reported:
                self._lease_reported = True
                log.error("lease lost: this broker stopped writing", extra={"reason": exc.message})
                if self._on_lease_lost is not None:
                    self._on_lease_lost(exc)
            raise errors.Closed() from exc  # the job ends quietly (see run below)

    def start(self) -> None:
        self._engine.enable(self._tasks)
        # The disk reserve exists from the start: a broker restarted on a disk that filled
        # meanwhile releases it to open (engine/disk.py). Written off the writer.
        try:
            self._engine.tend_disk()
        except Exception:
            log.exception("could not create the disk reserve")
        self._scheduler.start()
        if self.push is not None:
            self.push.start()

    def stop(self) -> None:
        """Stop the loops and wait for a running pass to finish."""
        if self.push is not None:
            self.push.stop()
        if self._scheduler.running:
            self._scheduler.shutdown(wait=True)

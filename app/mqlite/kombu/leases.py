"""The leases a kombu connection holds, and the thread that keeps them alive.

Celery's visibility timeout is the queue's lock duration; a task that runs longer keeps
its message because every claimed, unsettled message (running, waiting in the worker's
prefetch buffer, or claimed by a long poll and not yet handed over) is renewed when a
third of its tightest remaining lease has passed (original-behaviour §9, the same cadence
as the SDK's Receiver), with one ``renew_batch`` per queue and ≤512 leases. A worker that
dies stops renewing, so its messages come back when their locks expire: at least once.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from dataclasses import dataclass

from mqlite import defaults, errors
from mqlite.clock import SYSTEM_CLOCK, Clock
from mqlite.sdk.consumer import RENEW_UNKNOWN_DEADLINE_MS, RETRY_FLOOR_MS, renewal_delay_ms
from mqlite.sdk.protocol import Client

log = logging.getLogger("mqlite.kombu")


@dataclass(slots=True)
class Lease:
    """One claimed message until it is settled: enough to settle or renew it."""

    queue: str
    seq_number: int
    lock_token: str
    locked_until_ms: int

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.queue, self.seq_number, self.lock_token)


class LeaseBook:
    """Every live lease of one kombu connection, renewed by one daemon thread."""

    def __init__(self, client: Client, clock: Clock = SYSTEM_CLOCK) -> None:
        self._client = client
        self._clock = clock
        self._leases: dict[tuple[str, int, str], Lease] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._dirty = False
        self._thread: threading.Thread | None = None

    def add(self, lease: Lease) -> None:
        with self._cond:
            if self._stopped:
                return
            self._leases[lease.key] = lease
            self._dirty = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="mqlite-kombu-renewer", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def discard(self, lease: Lease) -> None:
        with self._cond:
            self._leases.pop(lease.key, None)

    def __len__(self) -> int:
        with self._cond:
            return len(self._leases)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._leases.clear()
            self._cond.notify_all()

    def _delay_ms(self) -> float:
        known = [x.locked_until_ms for x in self._leases.values() if x.locked_until_ms > 0]
        if not known:
            return RENEW_UNKNOWN_DEADLINE_MS
        return renewal_delay_ms(min(known) - self._clock.now_ms())

    def _run(self) -> None:
        due: float | None = None
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    if not self._leases:
                        due = None
                        self._cond.wait()
                        continue
                    now = self._clock.monotonic_ms()
                    if due is None or self._dirty:
                        candidate = now + self._delay_ms()
                        due = candidate if due is None else min(due, candidate)
                        self._dirty = False
                    if now >= due:
                        break
                    self._cond.wait((due - now) / 1000.0)
                by_queue: dict[str, list[Lease]] = defaultdict(list)
                for lease in self._leases.values():
                    by_queue[lease.queue].append(lease)
            failed = any([self._renew(queue, leases) for queue, leases in by_queue.items()])
            due = self._clock.monotonic_ms() + RETRY_FLOOR_MS if failed else None

    def _renew(self, queue: str, leases: list[Lease]) -> bool:
        """Renew one queue's leases; True if a call failed (retried soon)."""
        step = defaults.RENEW_BATCH_MAX
        for start in range(0, len(leases), step):
            chunk = leases[start : start + step]
            try:
                results = self._client.renew_batch(
                    queue, [(x.seq_number, x.lock_token) for x in chunk]
                )
            except errors.Closed:
                return False
            except Exception as exc:
                log.warning("renewing %d lease(s) on %r failed: %s", len(chunk), queue, exc)
                return True
            by_seq = {r.seq_number: r for r in results}
            now = self._clock.now_ms()
            with self._cond:
                for lease in chunk:
                    res = by_seq.get(lease.seq_number)
                    if res is not None and res.ok and (res.locked_until_ms or now + 1) > now:
                        lease.locked_until_ms = max(lease.locked_until_ms, res.locked_until_ms)
                    elif self._leases.pop(lease.key, None) is not None:
                        log.warning(
                            "the lease on message %d in %r is lost (the lock expired before "
                            "it was renewed): it will be delivered again",
                            lease.seq_number,
                            queue,
                        )
        return False

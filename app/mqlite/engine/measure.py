"""In-process measurements behind the observation: committed message effects and storage
operations (maintenance runs are in ``maintenance_runs.py``, filter failures in
``topics.FilterFailures``). No prometheus import: ``server/metrics.py`` renders them.

Every recorder here runs while the writer token is held (after-commit callbacks, the
measured store's transaction exits, serialized reads), so a snapshot taken on the
writer is consistent; storage operations also take a lock of their own, because reads
on a replica (``read_replica.py``) are recorded off the writer. They are process-local and
start at zero with the engine (observability, "Message effects").
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqlite import errors
from mqlite.engine import diagnostics

if TYPE_CHECKING:
    from mqlite.engine.store import Store

# Seconds; the same finite buckets for every duration histogram (+Inf is the count): the
# original's bounds, which its Observe decoder requires (spec/observe-wire.md, ending at 20).
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0)

# The spec's message-effect table, in its order (ops/metric-contract.json pins the same).
EVENTS = (
    "enqueued",
    "scheduled",
    "deduplicated",
    "dedup_conflict",
    "delivered",
    "redelivered",
    "completed",
    "receive_deleted",
    "abandoned",
    "deferred",
    "rejected",
    "dead_lettered",
    "ttl_discarded",
    "retention_deleted",
    "purged",
    "canceled",
    "redriven",
    "lock_expired",
    "recovered",
    "activated",
)

OPERATIONS = ("read", "write", "transaction")
ERROR_CODES = ("canceled", "closed", "busy", "connection", "full", "corrupt", "io", "other")
# The fixed (outcome, error_code) pairs, zero-initialised per operation: success has no
# code, an application refusal is always "application", an unknown commit its own code.
OUTCOME_CODES = (
    ("ok", ""),
    *(("error", code) for code in ERROR_CODES),
    ("rejected", "application"),
    ("outcome_unknown", "outcome_unknown"),
)

# storage.failure lines per (operation, category): one, then at most one per interval with
# the number suppressed meanwhile (a full disk under load must not flood the log).
FAILURE_LOG_INTERVAL_S = 10.0


class Histogram:
    """Cumulative-on-read duration histogram over ``BUCKETS``."""

    __slots__ = ("count", "counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * len(BUCKETS)
        self.count = 0
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        i = bisect_left(BUCKETS, seconds)
        if i < len(self.counts):
            self.counts[i] += 1
        self.count += 1
        self.sum += seconds

    def cumulative(self) -> tuple[int, ...]:
        """The count at or below each of ``BUCKETS``, in order."""
        out, running = [], 0
        for n in self.counts:
            running += n
            out.append(running)
        return tuple(out)


Effect = tuple[str, str, int]  # (queue, event, count)


class EventCounts(dict[str, int]):
    """One queue's counts by event; a missing event reads 0 (``counts[e] += n``).

    Not a ``Counter``: Counter defines ``__delitem__`` in Python, which makes every
    ``counts[e] = ...`` on it a Python-level call (~1,000 CPU instructions, on every
    send); a dict subclass with only ``__missing__`` keeps dict's own C store."""

    __slots__ = ()

    def __missing__(self, key: str) -> int:
        return 0


class MessageEffects:
    """Committed effects per queue and event; recorded only by after-commit callbacks
    (and ``add`` from one), so every change happens on the writer."""

    def __init__(self) -> None:
        # A queue's counts appear with its first write (``by_queue[q][e] += n``); read
        # with ``get``/``items`` only, so a read never adds a queue.
        self.by_queue: defaultdict[str, EventCounts] = defaultdict(EventCounts)

    def add(self, queue: str, event: str, n: int) -> None:
        self.by_queue[queue][event] += n

    def after_commit(self, store: Store, effects: Iterable[Effect]) -> None:
        """Count ``effects`` once the current transaction commits (never on rollback,
        never for a rolled-back savepoint: ``Store.after_commit``)."""
        items = [(q, e, n) for q, e, n in effects if n]
        if items:
            add = self.add

            def record() -> None:
                for queue, event, n in items:
                    add(queue, event, n)

            store.after_commit(record)

    def forget_after_commit(self, store: Store, queue: str) -> None:
        """Drop a deleted queue's counters once its deletion commits (issue 26: 6,088
        deleted queues kept 18,264 series). After the commit, so a rolled-back delete
        keeps them; a queue created again under the name starts from zero."""
        by_queue = self.by_queue

        def forget() -> None:
            by_queue.pop(queue, None)

        store.after_commit(forget)

    def keep_only(self, queues: set[str]) -> None:
        """Drop the counters of every queue not in ``queues`` (after a commit of unknown
        outcome the catalog is read again: a delete that committed ran no callback)."""
        for queue in [q for q in self.by_queue if q not in queues]:
            del self.by_queue[queue]

    def snapshot(self) -> dict[str, dict[str, int]]:
        """A copy (take it on the writer; the zero-fill is done after, off it)."""
        return {queue: dict(counts) for queue, counts in self.by_queue.items()}


@dataclass(slots=True)
class OperationStats:
    count: int = 0
    retries: int = 0
    duration: Histogram = field(default_factory=Histogram)
    last_error: tuple[int, diagnostics.Failure] | None = None  # (at_ms, failure)

    def succeeded(self, seconds: float, retries: int) -> None:
        self.count += 1
        if retries:
            self.retries += retries
        h = self.duration  # Histogram.observe inlined: one per engine call (hot path)
        i = bisect_left(BUCKETS, seconds)
        if i < len(h.counts):
            h.counts[i] += 1
        h.count += 1
        h.sum += seconds


class StorageOps:
    """Storage operations by (operation, outcome, error_code), every fixed pair present."""

    def __init__(self, now_ms: Callable[[], int], monotonic_s: Callable[[], float]) -> None:
        self._now_ms = now_ms
        self._monotonic_s = monotonic_s
        self.stats: dict[tuple[str, str, str], OperationStats] = {
            (op, outcome, code): OperationStats()
            for op in OPERATIONS
            for outcome, code in OUTCOME_CODES
        }
        self._logged: dict[tuple[str, str], tuple[float, int]] = {}
        # Reads on a replica (read_replica.py) are recorded off the writer, beside it.
        self._lock = threading.Lock()

    @contextmanager
    def locked(self) -> Iterator[dict[tuple[str, str, str], OperationStats]]:
        """The stats, with no recorder changing them meanwhile (a consistent snapshot)."""
        with self._lock:
            yield self.stats

    def ok(self, operation: str, seconds: float, retries: int = 0) -> None:
        with self._lock:
            self.stats[operation, "ok", ""].succeeded(seconds, retries)

    def ok_on_writer(self, operation: str) -> Callable[[float, int], None]:
        """The recorder of ``operation``'s successes, for an operation recorded only by
        the writer token's holder (a transaction): no lock, as the one reader of the
        stats (``observe.py``) runs on the writer too (the lock keeps replica reads,
        recorded off it, consistent); bound once, so no key is built per call."""
        return self.stats[operation, "ok", ""].succeeded

    def failed(self, operation: str, seconds: float, exc: BaseException, retries: int = 0) -> None:
        """A failed operation: a storage error, an interruption or an application refusal."""
        with self._lock:
            self._failed(operation, seconds, exc, retries)

    def _failed(self, operation: str, seconds: float, exc: BaseException, retries: int) -> None:
        if diagnostics.is_application(exc):
            self._application_statement(operation, seconds, exc, retries)
            return
        if isinstance(exc, diagnostics.INTERRUPTIONS) or diagnostics.classify(exc) != "other":
            fail = diagnostics.failure(operation, exc)
            outcome = "outcome_unknown" if fail.category == "outcome_unknown" else "error"
            key = (operation, outcome, fail.category)
        elif _is_storage(exc):
            fail = diagnostics.failure(operation, exc)
            key = (operation, "error", "other")
        else:
            s = self.stats[operation, "rejected", "application"]
            s.count += 1
            s.retries += retries
            s.duration.observe(seconds)
            return
        s = self.stats[key]
        s.count += 1
        s.retries += retries
        s.duration.observe(seconds)
        s.last_error = (self._now(), fail)
        self._log(operation, fail, interrupted=isinstance(exc, diagnostics.INTERRUPTIONS))

    def _application_statement(
        self, operation: str, seconds: float, exc: BaseException, retries: int
    ) -> None:
        """The application's own statement in ``tx()`` failed: the storage worked, the
        transaction was rolled back. Counted as an application refusal, logged as one."""
        s = self.stats[operation, "rejected", "application"]
        s.count += 1
        s.retries += retries
        s.duration.observe(seconds)
        now = self._monotonic_s()
        last, suppressed = self._logged.get((operation, "application"), (None, 0))
        if last is not None and now - last < FAILURE_LOG_INTERVAL_S:
            self._logged[operation, "application"] = (last, suppressed + 1)
            return
        self._logged[operation, "application"] = (now, 0)
        detail = diagnostics.redact(f"{type(exc).__name__}: {exc}")
        diagnostics.emit(
            "transaction.application_error",
            f"transaction rolled back: the application's own statement failed ({detail}); "
            "storage is fine",
            logging.WARNING,
            operation=operation,
            category="application",
            detail=detail,
            suppressed=suppressed,
        )

    def _now(self) -> int:
        return self._now_ms()

    def _log(self, operation: str, fail: diagnostics.Failure, *, interrupted: bool) -> None:
        now = self._monotonic_s()
        last, suppressed = self._logged.get((operation, fail.category), (None, 0))
        if last is not None and now - last < FAILURE_LOG_INTERVAL_S:
            self._logged[operation, fail.category] = (last, suppressed + 1)
            return
        self._logged[operation, fail.category] = (now, 0)
        diagnostics.emit(
            "storage.interrupted" if interrupted else "storage.failure",
            f"storage {operation} {'interrupted' if interrupted else 'failed'}: {fail.explanation}",
            logging.INFO if interrupted else logging.ERROR,
            operation=operation,
            category=fail.category,
            fingerprint=fail.fingerprint,
            sqlite_code=fail.sqlite_code,
            detail=fail.detail,
            suppressed=suppressed,
        )


def _is_storage(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.Error | errors.StorageError)

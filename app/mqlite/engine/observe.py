"""The canonical observation snapshot (api-reference "Observe"; observability, "Availability
and freshness"), as an Engine mixin. No prometheus import: ``server/metrics.py`` renders it.

One ``observe()`` = a read probe plus ONE grouped SQL read of every retained row
(``QUEUE_GAUGES_SQL``), both on the writer and stamped with one engine clock value, then
the in-process measurements as they stand (with a replica, ``MQLITE_DB_REPLICA``, the
grouped read runs there first, off the writer). A failed read is reported, never papered
over: the collection is ``unavailable`` with a bounded error code, ``queues`` is None,
and the counters (which need no database) are still returned.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, suppress
from time import perf_counter
from typing import Any

from mqlite import errors
from mqlite.engine import diagnostics
from mqlite.engine import observation as o
from mqlite.engine.core import serialized
from mqlite.engine.maintenance_runs import TaskState
from mqlite.engine.measure import BUCKETS, EVENTS, Histogram, OperationStats
from mqlite.engine.part import Part
from mqlite.engine.push_registry import DURATION_BUCKETS, PUSH_OUTCOMES, PushMeasure
from mqlite.engine.store import SCHEMA_VERSION
from mqlite.version import VERSION

# ONE scan of messages grouped by (queue, state) -- the spec's "one grouped message scan",
# whose cost grows with the retained backlog -- after every queue row (so empty queues
# report zeros), in one statement and so one snapshot. Grouping by the state column and
# pivoting the few resulting rows in Python costs about half of five SUM(state = ...)
# expressions per row. tests/engine/test_observe.py pins the plan: one SCAN of messages,
# no per-queue probe.
QUEUE_GAUGES_SQL = """
SELECT name, kind, NULL, 0, NULL FROM queues
UNION ALL
SELECT queue, NULL, state, COUNT(*), MIN(enqueued_at) FROM messages GROUP BY queue, state
"""

# The read probe: a real statement on the one connection (success proves a read, not a
# write, delivery or integrity).
READ_PROBE_SQL = "SELECT count(*) FROM meta"

# The grouped scan's rows (None when the read failed), its duration, its error code.
Collected = tuple[list[tuple[object, ...]] | None, float, str]
# Message-effect counters: queue -> event -> count (``MessageEffects.snapshot``).
Counts = dict[str, dict[str, int]]


class Observer(Part):
    """``observe()`` and the pieces it reads."""

    _rows: RowCache = {}  # noqa: RUF012 (replaced, never mutated: see zero_filled)

    def observe(self, on_sample: Callable[[], None] | None = None) -> o.Observation:
        """The canonical observation; the HTTP domain is ``not_applicable`` here (the
        server fills it in) and ``access`` is ``embedded``. With a replica
        (``read_replica.py``) the grouped scan runs there, off the writer.
        ``on_sample`` is called just before the first read: everything committed before
        it is in the observation (the server's coalescing relies on that)."""
        begin = on_sample or _nothing
        pool = self._pool()
        collected = None
        if self.replica is not None:
            begin()
            begin = _nothing
            collected = self._collect(self.replica.read)
        observed, rows, counts, known = self._observe(pool, collected, begin)
        # The pivot and the zero-fill need no database: done after the writer is released.
        queues = None if rows is None else tuple(_gauges(rows, observed.sampled_at_ms))
        if queues is not None:
            known.update(g.queue for g in queues)
        kinds = [g.kind for g in queues or ()]
        messages, self._rows = zero_filled(counts, known, self._rows)
        return dataclasses.replace(
            observed,
            queues=queues,
            queue_count=kinds.count("queue"),
            subscription_count=kinds.count("subscription"),
            messages=messages,
        )

    def _pool(self) -> o.Pool:
        """The writer's one connection, plus the replica's when there is one, sampled
        before the observation takes the writer: the writer is in use while another caller
        holds it or waits for it."""
        replica = self.replica
        extra = (
            o.Pool(
                replica.size, replica.open, replica.in_use, 0, replica.waits, replica.wait_seconds
            )
            if replica is not None
            else o.Pool(0, 0, 0, 0, 0, 0.0)
        )
        if self.closed:
            return o.Pool(1 + extra.max_open, 0, 0, 0, 0, extra.wait_duration_seconds)
        busy = int(self.writer.busy(excluding=threading.get_ident()))
        opened, in_use = 1 + extra.open, busy + extra.in_use
        return o.Pool(
            1 + extra.max_open,
            opened,
            in_use,
            opened - in_use,
            extra.wait_count,
            extra.wait_duration_seconds,
        )

    def _collect(self, reader: Callable[[], AbstractContextManager[Any]]) -> Collected:
        """The grouped scan through ``reader`` (the replica's, or the writer's)."""
        started = perf_counter()
        rows: list[tuple[object, ...]] | None = None
        code = ""
        try:
            with reader() as conn:
                rows = conn.execute(QUEUE_GAUGES_SQL).fetchall()
        except (sqlite3.Error, errors.MQLiteError) as exc:
            code = diagnostics.classify(exc)
        return rows, perf_counter() - started, code

    @serialized
    def _observe(
        self, pool: o.Pool, collected: Collected | None, begin: Callable[[], None]
    ) -> tuple[o.Observation, list[tuple[object, ...]] | None, Counts, set[str]]:
        """Everything read under the writer: the probe, the grouped rows (None when the
        read failed; already ``collected`` on a replica), the in-process measurements
        and the names of the queues (the catalog's and those with counters: the
        message-effect domain), stamped with one clock value."""
        begin()
        now = self.clock.now_ms()
        read_ok, latency = self._probe()
        rows, duration, error_code = collected or self._collect(self.store.read)
        if rows is not None:
            self.last_collection_ms = now
        counts = self.effects.snapshot()
        known = set(counts) | set(self.catalog.queues())
        observed = o.Observation(
            sampled_at_ms=now,
            started_at_ms=self.started_at_ms,
            backend=backend_of(self.store.location),
            version=VERSION,
            access="embedded",
            collection=o.Collection(
                "available" if rows is not None else "unavailable",
                self.last_collection_ms,
                duration,
                error_code,
            ),
            queue_count=0,
            subscription_count=0,
            queues=None,
            runtime=self._runtime(read_ok, latency),
            messages=(),
            storage=o.Storage(self._operations(), pool),
            maintenance=tuple(_task(t, s) for t, s in self.maintenance_runs.tasks.items()),
            filters=tuple(
                o.FilterFailure(stage, n) for stage, n in self.filter_failures.by_stage()
            ),
            http=o.NOT_APPLICABLE,
            schedules=self.schedule_measures.observe(self.store.reader, now),
            pushes=push_measures(self.pushes.measures()),
        )
        return observed, rows, counts, known

    def _probe(self) -> tuple[bool, float]:
        try:
            with self.store.read() as conn:
                started = perf_counter()
                conn.execute(READ_PROBE_SQL).fetchone()
                return True, perf_counter() - started
        except (sqlite3.Error, errors.MQLiteError):
            return False, 0.0

    def _runtime(self, read_ok: bool, latency: float) -> o.Runtime:
        size = _footprint(self.store.location.path)
        return o.Runtime(SCHEMA_VERSION, latency, read_ok, size or 0, size is not None)

    def _operations(self) -> tuple[o.StorageOperation, ...]:
        with self.storage_ops.locked() as stats:  # replica reads record off the writer
            return tuple(
                _operation(op, outcome, code, s) for (op, outcome, code), s in stats.items()
            )


def _nothing() -> None:
    pass


# Queues handled between two pauses of the pivot and the zero-fill, which run after the
# writer is released but hold the GIL (tens of ms at 10,000 queues): a pause lets the
# event loop and the writer take it at once instead of after the 5 ms switch interval.
PAUSE_EVERY = 256
NORMAL_STATES = ("active", "locked", "deferred", "scheduled", "dead_lettered")


def _gauges(rows: Sequence[tuple[object, ...]], now_ms: int) -> list[o.QueueGauges]:
    """Pivot (queue, state, count, oldest enqueue) rows into one gauge set per queue."""
    kinds: dict[str, str] = {}
    counts: dict[str, dict[str, int]] = {}
    oldest: dict[str, int] = {}
    for name, kind, state, n, first in rows:
        queue = str(name)
        if state is None:
            kinds[queue] = str(kind)
            continue
        counts.setdefault(queue, {})[str(state)] = int(n)  # type: ignore[call-overload]
        if state in ("active", "locked") and first is not None:
            at = int(first)  # type: ignore[call-overload]
            oldest[queue] = min(oldest.get(queue, at), at)
    out = []
    for i, queue in enumerate(sorted(kinds)):
        if i and not i % PAUSE_EVERY:
            time.sleep(0)  # off the writer, but holding the GIL: let the others run
        c = counts.get(queue, {})
        a, lk, d, s, dl = (c.get(state, 0) for state in NORMAL_STATES)
        total = sum(c.values())
        age = max(now_ms - oldest[queue], 0) if queue in oldest else 0
        unexpected = total - (a + lk + d + s + dl)
        out.append(o.QueueGauges(queue, kinds[queue], a, lk, d, s, dl, unexpected, total, age))
    return out


# The events in the order the rows are sorted (by queue, then event name).
SORTED_EVENTS = tuple(sorted(EVENTS))


# A queue's rows of the last observation, with the counts they were made from.
RowCache = dict[str, tuple[dict[str, int], tuple[o.MessageEffect, ...]]]
NO_COUNTS: dict[str, int] = {}


def zero_filled(
    counts: Counts, queues: set[str], cache: RowCache
) -> tuple[tuple[o.MessageEffect, ...], RowCache]:
    """All 20 events of every known queue, zeros included, sorted by queue then event:
    the original's contract (spec/observe-wire.md "Messages"), so ``increase()`` sees a
    queue's first completion and a dashboard shows 0 rather than "no data". A deleted
    queue's counters are gone (``MessageEffects.forget_after_commit``), so this grows
    with the inventory, not with its history. A queue whose counts did not change since
    the last observation reuses its rows from ``cache`` (20 new objects a queue were
    most of a 10,000-queue observation's CPU); the new cache, of the known queues only,
    is returned beside the rows."""
    out: list[o.MessageEffect] = []
    kept: RowCache = {}
    effect = o.MessageEffect
    for i, queue in enumerate(sorted(queues)):
        if i and not i % PAUSE_EVERY:
            time.sleep(0)  # off the writer, but holding the GIL: let the others run
        c = counts.get(queue, NO_COUNTS)
        cached = cache.get(queue)
        if cached is not None and cached[0] == c:
            rows = cached[1]
        else:
            rows = tuple([effect(queue, event, c.get(event, 0)) for event in SORTED_EVENTS])
        kept[queue] = (c, rows)
        out.extend(rows)
    return tuple(out), kept


def backend_of(location: Any) -> str:
    """``local``, ``memory`` or ``remote``: the original's vocabulary (Status keeps
    its own longer text)."""
    if location.is_remote:
        return "remote"
    return "memory" if location.is_memory else "local"


def _footprint(path: str | None) -> int | None:
    """db + WAL + SHM bytes; None for memory or when the main file cannot be measured."""
    if path is None:
        return None
    try:
        total = os.stat(path).st_size
    except OSError:
        return None
    for suffix in ("-wal", "-shm"):
        with suppress(FileNotFoundError):
            total += os.stat(path + suffix).st_size
    return total


def histogram(h: Histogram) -> o.HistogramValue:
    return o.HistogramValue(BUCKETS, h.cumulative(), h.count, round(h.sum, 9))


def _operation(op: str, outcome: str, code: str, s: OperationStats) -> o.StorageOperation:
    last = None
    if s.last_error is not None:
        at, f = s.last_error
        last = o.ErrorDetail(at, f.category, f.explanation, f.fingerprint, f.sqlite_code)
    return o.StorageOperation(op, outcome, code, s.count, s.retries, histogram(s.duration), last)


def _task(task: str, s: TaskState) -> o.MaintenanceTask:
    return o.MaintenanceTask(
        task=task,
        enabled=s.enabled,
        runs=sum(s.runs.values()),
        interrupted=s.runs["interrupted"],
        failures=s.runs["error"],
        duration=histogram(s.duration),
        last_run_at_ms=s.last_run_at_ms,
        last_outcome=s.last_outcome,
        last_success_at_ms=s.last_success_at_ms,
        consecutive_failures=s.consecutive_failures,
        recovered_at_ms=s.recovered_at_ms,
        diagnostics=tuple(
            o.StepDiagnostic(
                f.at_ms,
                f.step,
                f.failure.category,
                f.failure.explanation,
                f.failure.fingerprint,
                f.failure.sqlite_code,
            )
            for f in s.history
        ),
    )


def push_measures(found: list[PushMeasure]) -> o.Pushes:
    """The push loop's counters as Observe's block: every outcome of every target that
    made an attempt since start (0 for an outcome it has not had), cumulative buckets."""
    deliveries, durations = [], []
    for m in found:
        for outcome in PUSH_OUTCOMES:
            deliveries.append(o.PushDelivery(m.queue, outcome, m.outcomes.get(outcome, 0)))
        cumulative = tuple(itertools.accumulate(m.buckets[:-1]))
        hist = o.HistogramValue(DURATION_BUCKETS, cumulative, sum(m.buckets), m.seconds)
        durations.append(o.PushDuration(m.queue, hist))
    return o.Pushes(tuple(deliveries), tuple(durations))

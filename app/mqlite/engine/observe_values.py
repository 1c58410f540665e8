"""From what the engine measured to Observe's values (``observation.py``): the grouped
scan's rows pivoted into per-queue gauges, the message-effect counters zero-filled, the
storage operations, maintenance tasks and push deliveries as their snapshot blocks, and
the database's footprint. Pure functions off the writer (the pivot and the zero-fill yield
the GIL every ``PAUSE_EVERY`` queues), so ``observe.py`` only reads and stamps.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from mqlite.engine import observation as o
from mqlite.engine.maintenance_runs import TaskState
from mqlite.engine.measure import BUCKETS, EVENTS, Histogram, OperationStats
from mqlite.engine.push_registry import DURATION_BUCKETS, PUSH_OUTCOMES, PushMeasure

# Message-effect counters: queue -> event -> count (``MessageEffects.snapshot``).
Counts = dict[str, dict[str, int]]

# Queues handled between two pauses of the pivot and the zero-fill, which run after the
# writer is released but hold the GIL (tens of ms at 10,000 queues): a pause lets the
# event loop and the writer take it at once instead of after the 5 ms switch interval.
PAUSE_EVERY = 256
NORMAL_STATES = ("active", "locked", "deferred", "scheduled", "dead_lettered")


def gauges(rows: Sequence[tuple[object, ...]], now_ms: int) -> list[o.QueueGauges]:
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


def footprint(path: str | None) -> int | None:
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


def operation(op: str, outcome: str, code: str, s: OperationStats) -> o.StorageOperation:
    last = None
    if s.last_error is not None:
        at, f = s.last_error
        last = o.ErrorDetail(at, f.category, f.explanation, f.fingerprint, f.sqlite_code)
    return o.StorageOperation(op, outcome, code, s.count, s.retries, histogram(s.duration), last)


def task(task: str, s: TaskState) -> o.MaintenanceTask:
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

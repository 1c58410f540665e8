"""The canonical observation snapshot (api-reference "Observe"; observability, "Availability
and freshness"), as a part of the engine (``part.py``). No prometheus import:
``server/metrics.py`` renders it.

One ``observe()`` = a read probe plus ONE grouped SQL read of every retained row
(``QUEUE_GAUGES_SQL``), both on the writer and stamped with one engine clock value, then
the in-process measurements as they stand (with a replica, ``MQLITE_DB_REPLICA``, the
grouped read runs there first, off the writer). A failed read is reported, never papered
over: the collection is ``unavailable`` with a bounded error code, ``queues`` is None,
and the counters (which need no database) are still returned. What is read becomes
Observe's values in ``observe_values.py``.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from time import perf_counter
from typing import Any

from mqlite import errors
from mqlite.engine import diagnostics
from mqlite.engine import observation as o
from mqlite.engine.core import serialized
from mqlite.engine.observe_values import (
    Counts,
    RowCache,
    backend_of,
    footprint,
    gauges,
    operation,
    push_measures,
    task,
    zero_filled,
)
from mqlite.engine.part import Part
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
        queues = None if rows is None else tuple(gauges(rows, observed.sampled_at_ms))
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
            maintenance=tuple(task(t, s) for t, s in self.maintenance_runs.tasks.items()),
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
        size = footprint(self.store.location.path)
        return o.Runtime(SCHEMA_VERSION, latency, read_ok, size or 0, size is not None)

    def _operations(self) -> tuple[o.StorageOperation, ...]:
        with self.storage_ops.locked() as stats:  # replica reads record off the writer
            return tuple(
                operation(op, outcome, code, s) for (op, outcome, code), s in stats.items()
            )


def _nothing() -> None:
    pass

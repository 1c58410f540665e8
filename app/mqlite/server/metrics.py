"""``/metrics``: the observation rendered by prometheus-client (observability, "Metric
contract"; every family of ops/metric-contract.json, and the compatibility aliases); the
per-queue families, which grow with the inventory, through a faster path that writes the
library's exact bytes (``metrics_queues.py``). Histogram bounds are the original's
(0.001 … 10, 20 s), written as its Go client writes them.

A custom collector over ONE ``Observation`` per scrape: no prometheus counter of our own
exists, so what Observe answers and what Prometheus scrapes cannot drift. A failed
collection exports ``mqlite_collection_success 0`` and omits every queue gauge (absent,
never zero); a failed read probe omits its latency; an unmeasurable footprint its size.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from mqlite.engine import observation as o
from mqlite.server.metrics_queues import message_events_text, queue_gauges_text

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def le_text(bound: float) -> str:
    """A bucket bound as the original (Go's client) writes it: ``1``, ``20``, ``0.001``,
    so one fleet's ``sum by (le)`` does not split on ``1`` versus ``1.0``."""
    return repr(float(bound)).removesuffix(".0")


def _buckets(h: o.HistogramValue) -> list[tuple[str, float]]:
    pairs = zip(h.bounds_seconds, h.bucket_counts, strict=True)
    return [*((le_text(b), float(n)) for b, n in pairs), ("+Inf", float(h.count))]


def _latency(h: o.HandlerLatency) -> list[tuple[str, float]]:
    finite = ((le_text(b.upper_bound_seconds), float(b.count)) for b in h.buckets)
    return [*finite, ("+Inf", float(h.count))]


def _histogram(name: str, doc: str, labels: list[str]) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, doc, labels=labels)


class _ObservationCollector(Collector):
    def __init__(self, observation: o.Observation) -> None:
        self.o = observation

    def collect(self) -> Iterator[Metric]:
        yield from self._health()
        if self.o.queues is not None:
            ents = GaugeMetricFamily("mqlite_entities", "Entities by kind.", labels=["kind"])
            ents.add_metric(["queue"], self.o.queue_count)
            ents.add_metric(["subscription"], self.o.subscription_count)
            yield ents
        yield from self._http()
        yield from self._storage()
        yield from self._maintenance()
        yield from self._replication()
        yield from self._schedules()
        yield from self._pushes()
        f = CounterMetricFamily(
            "mqlite_filter_failures", "Subscription filter routing failures.", labels=["stage"]
        )
        for ff in self.o.filters:
            f.add_metric([ff.stage], ff.count)
        yield f

    def _pushes(self) -> Iterator[Metric]:
        """Push delivery (docs/push.md): attempts by outcome and POST time, per target that
        made an attempt since start."""
        deliveries = CounterMetricFamily(
            "mqlite_push_deliveries",
            "Push attempts by outcome (delivered, retry, rejected).",
            labels=["queue", "outcome"],
        )
        for d in self.o.pushes.deliveries:
            deliveries.add_metric([d.queue, d.outcome], d.count)
        durations = _histogram(
            "mqlite_push_duration_seconds", "Push POST time, connect to last byte.", ["queue"]
        )
        for p in self.o.pushes.durations:
            durations.add_metric([p.queue], _buckets(p.duration), p.duration.sum_seconds)
        yield from (deliveries, durations)

    def _schedules(self) -> Iterator[Metric]:
        """Cron schedules (docs/cron.md): one series per schedule that fired since start or
        has a due slot (at most MAX_SCHEDULES)."""
        fired = CounterMetricFamily(
            "mqlite_schedule_fired", "Cron slots sent since start.", labels=["schedule"]
        )
        lag = GaugeMetricFamily(
            "mqlite_schedule_lag_seconds",
            "How far behind its timetable a schedule is (due slot age, or the latest "
            "firing's fire time minus slot time for 10 minutes).",
            labels=["schedule"],
        )
        for s in self.o.schedules.schedules:
            fired.add_metric([s.schedule], s.fired)
            lag.add_metric([s.schedule], s.lag_seconds)
        yield from (fired, lag)

    def _replication(self) -> Iterator[Metric]:
        """Litestream's lag: the two measured gauges are absent unless it answered."""
        rep = self.o.replication
        yield GaugeMetricFamily(
            "mqlite_replication_enabled",
            "1 when the database is replicated by Litestream (MQLITE_REPLICA_URL).",
            value=int(rep.state != "disabled"),
        )
        if rep.lag_seconds is not None and rep.last_sync_at_ms is not None:
            yield GaugeMetricFamily(
                "mqlite_replication_lag_seconds",
                "Age of Litestream's last successful sync to the replica.",
                value=rep.lag_seconds,
            )
            yield GaugeMetricFamily(
                "mqlite_replication_last_sync_timestamp_seconds",
                "Time of Litestream's last successful sync to the replica.",
                value=rep.last_sync_at_ms / 1000,
            )

    def _health(self) -> Iterator[Metric]:
        ob, c, rt = self.o, self.o.collection, self.o.runtime
        info = GaugeMetricFamily(
            "mqlite_info", "Broker identity.", labels=["version", "backend", "schema_version"]
        )
        info.add_metric([ob.version, ob.backend, rt.schema_version], 1)
        yield info
        yield GaugeMetricFamily(
            "mqlite_start_time_seconds", "Engine start time.", value=ob.started_at_ms / 1000
        )
        yield GaugeMetricFamily(
            "mqlite_sample_timestamp_seconds", "Snapshot time.", value=ob.sampled_at_ms / 1000
        )
        ok = c.state == "available"
        yield GaugeMetricFamily(
            "mqlite_collection_success", "1 when queue collection succeeded.", value=int(ok)
        )
        status = GaugeMetricFamily(
            "mqlite_collection_status", "Queue collection state.", labels=["state", "error_code"]
        )
        status.add_metric([c.state, c.error_code], 1)
        yield status
        yield GaugeMetricFamily(
            "mqlite_collection_last_success_timestamp_seconds",
            "Last successful queue collection, 0 before one.",
            value=c.last_success_at_ms / 1000,
        )
        yield GaugeMetricFamily(
            "mqlite_collection_duration_seconds",
            "Queue collection elapsed time.",
            value=c.duration_seconds,
        )
        yield GaugeMetricFamily(
            "mqlite_storage_read_available", "Storage read probe succeeded.", rt.read_available
        )
        if rt.read_available:  # a failed probe has no latency: absent, not its 0
            yield GaugeMetricFamily(
                "mqlite_storage_ping_seconds", "Read probe round trip.", rt.ping_seconds
            )
        yield GaugeMetricFamily(
            "mqlite_storage_size_available",
            "Local footprint can be reported.",
            value=rt.db_size_available,
        )
        if rt.db_size_available:
            yield GaugeMetricFamily(
                "mqlite_storage_size_bytes", "Database + WAL + SHM bytes.", rt.db_size_bytes
            )

    def _http(self) -> Iterator[Metric]:
        http = self.o.http
        if http.state != "available":
            return
        requests = CounterMetricFamily(
            "mqlite_rpc_requests", "RPC requests by result code.", labels=["rpc", "code"]
        )
        elapsed = CounterMetricFamily(
            "mqlite_rpc_request_duration_seconds",
            "Cumulative whole-request time, authentication included.",
            labels=["rpc", "code"],
        )
        for r in http.requests:
            requests.add_metric([r.rpc, r.code], r.count)
            elapsed.add_metric([r.rpc, r.code], r.duration_seconds)
        handlers = _histogram(
            "mqlite_rpc_duration_seconds", "Post-authentication handler latency.", ["rpc"]
        )
        for h in http.handler_latency:
            handlers.add_metric([h.rpc], _latency(h), h.sum_seconds)
        auth = CounterMetricFamily(
            "mqlite_authentication", "Final authentication outcomes.", labels=["outcome"]
        )
        for a in http.authentication:
            auth.add_metric([a.outcome], a.count)
        yield from (requests, elapsed, handlers, auth)

    def _storage(self) -> Iterator[Metric]:
        labels = ["operation", "outcome", "error_code"]
        ops = CounterMetricFamily("mqlite_storage_operations", "Storage operations.", labels=labels)
        durations = _histogram(
            "mqlite_storage_operation_duration_seconds", "Storage operation time.", labels
        )
        retries = CounterMetricFamily(
            "mqlite_storage_retries", "Safe retries within storage operations.", labels=labels
        )
        for s in self.o.storage.operations:
            key = [s.operation, s.outcome, s.error_code]
            ops.add_metric(key, s.count)
            durations.add_metric(key, _buckets(s.duration), s.duration.sum_seconds)
            retries.add_metric(key, s.retries)
        pool = self.o.storage.pool
        conns = GaugeMetricFamily(
            "mqlite_storage_pool_connections", "Database connections.", labels=["state"]
        )
        for state in ("max_open", "open", "in_use", "idle"):
            conns.add_metric([state], getattr(pool, state))
        yield from (ops, durations, retries, conns)
        yield CounterMetricFamily(
            "mqlite_storage_pool_waits", "Connection-pool waits.", value=pool.wait_count
        )
        yield CounterMetricFamily(
            "mqlite_storage_pool_wait_duration_seconds",
            "Cumulative connection-pool waiting time.",
            value=pool.wait_duration_seconds,
        )

    def _maintenance(self) -> Iterator[Metric]:
        enabled = GaugeMetricFamily(
            "mqlite_maintenance_enabled", "Maintenance task enabled.", labels=["task"]
        )
        runs = CounterMetricFamily(
            "mqlite_maintenance_runs", "Maintenance passes by outcome.", labels=["task", "outcome"]
        )
        durations = _histogram("mqlite_maintenance_duration_seconds", "Pass time.", ["task"])
        last = GaugeMetricFamily(
            "mqlite_maintenance_last_success_timestamp_seconds",
            "Last successful pass, 0 before one.",
            labels=["task"],
        )
        for t in self.o.maintenance:
            enabled.add_metric([t.task], int(t.enabled))
            success = t.runs - t.failures - t.interrupted
            for outcome, n in (("success", success), ("error", t.failures)):
                runs.add_metric([t.task, outcome], n)
            runs.add_metric([t.task, "interrupted"], t.interrupted)
            durations.add_metric([t.task], _buckets(t.duration), t.duration.sum_seconds)
            last.add_metric([t.task], t.last_success_at_ms / 1000)
        yield from (enabled, runs, durations, last)


def render(observation: o.Observation) -> bytes:
    """The exposition text of one observation (CPU only: run it off the event loop)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ObservationCollector(observation))
    text = generate_latest(registry).decode()
    text += message_events_text(observation.messages)
    if observation.queues is not None:
        text += queue_gauges_text(observation.queues)
    return text.encode()

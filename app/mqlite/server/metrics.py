"""``/metrics``: the observation rendered by prometheus-client (observability, "Metric
contract"; every family of ops/metric-contract.json, and the compatibility aliases); the
per-queue gauge families, which grow with the inventory, through a faster path that writes
the library's exact bytes (``queue_gauges_text``).

A custom collector over ONE ``Observation`` per scrape: no prometheus counter of our own
exists, so what Observe answers and what Prometheus scrapes cannot drift. A failed
collection exports ``mqlite_collection_success 0`` and omits every queue gauge (absent,
never zero); a failed read probe omits its latency; an unmeasurable footprint its size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import cast

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from mqlite.engine import observation as o

STATES = ("active", "locked", "deferred", "scheduled", "dead_lettered")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _buckets(h: o.HistogramValue) -> list[tuple[str, float]]:
    return [*((repr(float(b.le)), float(b.count)) for b in h.buckets), ("+Inf", float(h.count))]


def _histogram(name: str, doc: str, labels: list[str]) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, doc, labels=labels)


class _ObservationCollector(Collector):
    def __init__(self, observation: o.Observation) -> None:
        self.o = observation

    def collect(self) -> Iterator[Metric]:
        yield from self._health()
        if self.o.queues is not None:
            ents = GaugeMetricFamily("mqlite_entities", "Entities by kind.", labels=["kind"])
            ents.add_metric(["queue"], self.o.queue_count or 0)
            ents.add_metric(["subscription"], self.o.subscription_count or 0)
            yield ents
        yield from self._messages()
        yield from self._http()
        yield from self._storage()
        yield from self._maintenance()
        yield from self._replication()
        yield from self._schedules()
        f = CounterMetricFamily(
            "mqlite_filter_failures", "Subscription filter routing failures.", labels=["stage"]
        )
        for ff in self.o.filters:
            f.add_metric([ff.stage], ff.count)
        yield f

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
        if rt.read_latency_seconds is not None:
            yield GaugeMetricFamily(
                "mqlite_storage_ping_seconds", "Read probe round trip.", rt.read_latency_seconds
            )
        yield GaugeMetricFamily(
            "mqlite_storage_size_available",
            "Local footprint can be reported.",
            value=rt.db_size_available,
        )
        if rt.db_size_bytes is not None:
            yield GaugeMetricFamily(
                "mqlite_storage_size_bytes", "Database + WAL + SHM bytes.", rt.db_size_bytes
            )

    def _messages(self) -> Iterator[Metric]:
        events = CounterMetricFamily(
            "mqlite_message_events", "Committed message effects.", labels=["queue", "event"]
        )
        completed = CounterMetricFamily(
            "mqlite_messages_completed",
            'Deprecated: mqlite_message_events_total{event="completed"}.',
            labels=["queue"],
        )
        for m in self.o.messages:
            events.add_metric([m.queue, m.event], m.count)
            if m.event == "completed":
                completed.add_metric([m.queue], m.count)
        yield from (events, completed)

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
        for h in http.handlers:
            handlers.add_metric([h.rpc], _buckets(h.duration), h.duration.sum)
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
            durations.add_metric(key, _buckets(s.duration), s.duration.sum)
            retries.add_metric(key, s.retries)
        pool = self.o.storage.pool
        conns = GaugeMetricFamily(
            "mqlite_storage_pool_connections", "Database connections.", labels=["state"]
        )
        for state in ("max_open", "open", "in_use", "idle"):
            conns.add_metric([state], getattr(pool, state))
        yield from (ops, durations, retries, conns)
        yield CounterMetricFamily(
            "mqlite_storage_pool_waits", "Connection-pool waits.", value=pool.waits
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
            for outcome in ("success", "error", "interrupted"):
                runs.add_metric([t.task, outcome], getattr(t.runs, outcome))
            durations.add_metric([t.task], _buckets(t.duration), t.duration.sum)
            last.add_metric([t.task], t.last_success_at_ms / 1000)
        yield from (enabled, runs, durations, last)


# The per-queue gauge families: (name, help, the value of a QueueGauges). Ten series per
# queue -- 10,000 of a scrape's ~11,800 at 1,000 queues -- so they are written by
# ``queue_gauges_text`` below rather than through generate_latest, whose per-sample label
# validation and escaping cost about 8 us a series (observe_bench: a 1,000-queue render
# took 100-220 ms of CPU per scrape under the GIL the event loop needs). The bytes are
# pinned equal to prometheus-client's own rendering of the same families
# (tests/ops/test_exposition.py), so this is a faster path, not a second format.
QUEUE_FAMILIES: tuple[tuple[str, str, Callable[[o.QueueGauges], float]], ...] = (
    ("mqlite_queue_retained_messages", "All retained rows.", lambda q: q.retained),
    (
        "mqlite_queue_unexpected_messages",
        "Rows outside the normal states.",
        lambda q: q.unexpected,
    ),
    (
        "mqlite_queue_oldest_message_age_seconds",
        "Enqueue age of the oldest active or locked row, 0 if none.",
        lambda q: q.oldest_age_seconds,
    ),
    (
        "mqlite_queue_total",
        "Deprecated: mqlite_queue_retained_messages.",
        lambda q: q.retained,
    ),
    (
        "mqlite_queue_oldest_message_age_ms",
        "Deprecated: mqlite_queue_oldest_message_age_seconds x 1000.",
        lambda q: q.oldest_age_seconds * 1000,
    ),
)
# The library's own float text (Go's: 1e+06, +Inf), so the bytes match generate_latest.
_number = cast(Callable[[float], str], floatToGoString)
BY_STATE = ("mqlite_queue_messages", "Retained messages by state.")


def _label_value(value: str) -> str:
    """A label value escaped as text format 0.0.4 requires (backslash, quote, newline)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def queue_gauges_text(queues: tuple[o.QueueGauges, ...]) -> str:
    """The per-queue gauge families in text format 0.0.4, each label value escaped once."""
    labels = [f'queue="{_label_value(q.queue)}"' for q in queues]
    name, doc = BY_STATE
    out = [f"# HELP {name} {doc}\n# TYPE {name} gauge\n"]
    for q, label in zip(queues, labels, strict=True):
        for state in STATES:
            value = _number(getattr(q, state))
            out.append(f'{name}{{{label},state="{state}"}} {value}\n')
    for name, doc, value_of in QUEUE_FAMILIES:
        out.append(f"# HELP {name} {doc}\n# TYPE {name} gauge\n")
        out.extend(
            f"{name}{{{label}}} {_number(value_of(q))}\n"
            for q, label in zip(queues, labels, strict=True)
        )
    return "".join(out)


def render(observation: o.Observation) -> bytes:
    """The exposition text of one observation (CPU only: run it off the event loop)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ObservationCollector(observation))
    text = generate_latest(registry)
    if observation.queues is None:
        return text
    return text + queue_gauges_text(observation.queues).encode()

"""Opt-in Prometheus ``/metrics`` (prometheus-client), behind manage or monitor credentials.

Queue gauges are read from the engine at scrape time (on the writer thread); the RPC
latency histogram is observed per registered route only, so invented paths add no series.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mqlite.engine import Engine

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20)
STATES = ("active", "locked", "deferred", "scheduled", "dead_lettered")


class _QueueCollector(Collector):
    def __init__(self) -> None:
        self.engine: Engine | None = None

    def collect(self) -> Iterator[Metric]:
        engine = self.engine
        if engine is None:
            return
        messages = GaugeMetricFamily(
            "mqlite_queue_messages",
            "Messages stored per queue and state.",
            labels=["queue", "state"],
        )
        total = GaugeMetricFamily(
            "mqlite_queue_total", "Messages stored per queue.", labels=["queue"]
        )
        oldest = GaugeMetricFamily(
            "mqlite_queue_oldest_message_age_ms",
            "Age of the oldest active or locked message.",
            labels=["queue"],
        )
        completed = CounterMetricFamily(
            "mqlite_messages_completed",
            "Messages completed since the broker started.",
            labels=["queue"],
        )
        for info in engine.list_queues():
            st = engine.stats(info.name)
            for state in STATES:
                messages.add_metric([info.name, state], getattr(st, state))
            total.add_metric([info.name], st.total)
            oldest.add_metric([info.name], st.oldest_message_age_ms)
            completed.add_metric([info.name], engine.completed.get(info.name, 0))
        yield from (messages, total, oldest, completed)


class Metrics:
    content_type = "text/plain; version=0.0.4; charset=utf-8"

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._queues = _QueueCollector()
        self.registry.register(self._queues)
        self._rpc = Histogram(
            "mqlite_rpc_duration_seconds",
            "RPC handler latency.",
            ["rpc"],
            buckets=BUCKETS,
            registry=self.registry,
        )

    def rpc_observer(self, rpc: str) -> Callable[[float], None]:
        """The latency recorder of one registered route (labels resolved once)."""
        return self._rpc.labels(rpc).observe

    def render(self, engine: Engine) -> bytes:
        """Called on the writer thread (it reads the engine)."""
        self._queues.engine = engine
        return generate_latest(self.registry)

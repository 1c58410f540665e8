"""The /metrics exposition against ops/metric-contract.json: every canonical family with
its exact name, type and labels (closed vocabularies respected, fixed combinations present
at zero), the compatibility aliases, queue gauges omitted (never zero) when collection
fails, and ``promtool check metrics`` flagging nothing but the deprecated names it must.
Rendered from a real engine's observation by the server's own collector."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from ops_support import canonical_families, deprecated_families, run, tool
from prometheus_client.parser import text_string_to_metric_families

from mqlite import wire
from mqlite.clock import FakeClock
from mqlite.engine import Engine
from mqlite.engine.measured_store import MeasuredStore
from mqlite.engine.observation import REPLICATION_DISABLED, Replication
from mqlite.server import metrics
from mqlite.server import metrics_queues as mq
from mqlite.server.http_metrics import HttpMeasurements
from mqlite.types import OutMessage

QUEUE_GAUGES = {
    "mqlite_entities",
    "mqlite_queue_messages",
    "mqlite_queue_retained_messages",
    "mqlite_queue_unexpected_messages",
    "mqlite_queue_oldest_message_age_seconds",
    "mqlite_queue_total",
    "mqlite_queue_oldest_message_age_ms",
}
# What promtool's linter says about the two names the spec keeps for v0.3.1 scrapers
# (observability, "Compatibility from v0.3.1"): exactly why they are deprecated.
DEPRECATED_LINT = {
    "mqlite_queue_oldest_message_age_ms metric names should not contain abbreviated units",
    'mqlite_queue_total non-counter metrics should not have "_total" suffix',
}


def exposition(tmp_path: Path, *, fail_collection: bool = False) -> str:
    clock = FakeClock()
    engine = Engine(f"file:{tmp_path / 'mq.db'}", clock=clock)
    try:
        # A cron schedule fires once into a queue deleted afterwards: the schedule's series
        # stay (they are the schedule's), the queue's counters go with it.
        engine.create_queue("reports")
        engine.create_schedule("nightly", "* * * * *", "reports", OutMessage(b"r"))
        clock.advance(60_000)
        assert engine.fire_schedules() == 1
        engine.receive("reports", 1, mode="receive_and_delete")
        engine.delete_queue("reports")
        engine.create_queue("orders")
        engine.subscribe("t", "audit")
        engine.send("orders", [OutMessage(body=b"x"), OutMessage(body=b"y")])
        done, bad = engine.receive("orders", 2)
        engine.complete("orders", done.seq_number, done.lock_token)
        engine.reject("orders", bad.seq_number, bad.lock_token)
        engine.run_maintenance_once()
        # The push loop's record of two attempts (docs/push.md): one failed, one delivered.
        engine.record_push("orders", outcome="retry", status=503, error="push: HTTP 503")
        engine.record_push("orders", outcome="delivered", status=204, seconds=0.02)
        http = HttpMeasurements(r.name for r in wire.ROUTES)
        http.route("QueueService/Send").finished("ok", 0.002)
        if fail_collection:
            MeasuredStore.fault = staticmethod(_io_error)
        try:
            observed = engine.observe()
        finally:
            MeasuredStore.fault = None
        # A replicated broker (what server/replication.py measures from Litestream), so
        # the replication gauges are exposed too; absent is the disabled case below.
        rep = Replication("available", observed.sampled_at_ms - 1500, 1.5)
        observed = dataclasses.replace(
            observed, access="monitor", http=http.snapshot(), replication=rep
        )
        return metrics.render(observed).decode()
    finally:
        engine.close()


def _io_error(kind: str) -> None:
    exc = sqlite3.OperationalError("disk I/O error")
    exc.sqlite_errorcode = 10  # type: ignore[attr-defined]
    raise exc


def families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def exposed_name(name: str, typ: str) -> str:
    """The parser names a counter family without its ``_total``."""
    return name.removesuffix("_total") if typ == "counter" else name


def label_values(fam: Any) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for s in fam.samples:
        for k, v in s.labels.items():
            if k != "le":
                out[k].add(v)
    return out


def test_every_contract_family_with_its_type_and_labels(tmp_path: Path) -> None:
    got = families(exposition(tmp_path))
    contract = {**canonical_families(), **deprecated_families()}
    for name, fam in contract.items():
        exposed = got.get(exposed_name(name, fam.type))
        assert exposed is not None, f"{name} missing"
        assert exposed.type == fam.type, name
        values = label_values(exposed)
        assert set(values) == set(fam.labels), (name, set(values))
        for label, vocab in fam.labels.items():
            if vocab is not None:
                assert values[label] <= set(vocab), (name, label, values[label] - set(vocab))
    extra = set(got) - {exposed_name(n, f.type) for n, f in contract.items()}
    assert extra == set(), extra


def test_fixed_combinations_start_at_zero(tmp_path: Path) -> None:
    got = families(exposition(tmp_path))
    contract = canonical_families()
    ops = got["mqlite_storage_operations"]
    assert len(ops.samples) == 3 * 11
    rpcs = got["mqlite_rpc_requests"]
    codes = contract["mqlite_rpc_requests_total"].labels["code"]
    assert codes is not None
    assert len(rpcs.samples) == len(wire.ROUTES) * len(codes)
    # Every event of every known queue, zeros included (issue 28: increase() must see a
    # queue's first completion), and the deprecated completed alias beside it.
    events = got["mqlite_message_events"]
    every = contract["mqlite_message_events_total"].labels["event"] or ()
    exposed = {(s.labels["queue"], s.labels["event"]): s.value for s in events.samples}
    assert set(exposed) == {(q, e) for q in ("orders", "audit") for e in every}
    assert exposed["orders", "enqueued"] == 2 and exposed["audit", "enqueued"] == 0
    completed = {s.labels["queue"]: s.value for s in got["mqlite_messages_completed"].samples}
    assert completed == {"orders": 1, "audit": 0}
    auth = {s.labels["outcome"] for s in got["mqlite_authentication"].samples}
    assert auth == set(contract["mqlite_authentication_total"].labels["outcome"] or ())


def test_failed_collection_omits_queue_gauges_never_zeros(tmp_path: Path) -> None:
    text = exposition(tmp_path, fail_collection=True)
    got = families(text)
    assert got["mqlite_collection_success"].samples[0].value == 0
    (status,) = got["mqlite_collection_status"].samples
    assert status.labels == {"state": "unavailable", "error_code": "io"}
    assert QUEUE_GAUGES.isdisjoint(got), QUEUE_GAUGES & set(got)
    assert "mqlite_storage_ping_seconds" not in got  # a failed probe has no latency
    assert got["mqlite_storage_read_available"].samples[0].value == 0
    assert "mqlite_message_events" in got  # in-process counters stay available
    (tmp_path / "ok").mkdir()
    good = families(exposition(tmp_path / "ok"))
    assert set(good) >= QUEUE_GAUGES and good["mqlite_collection_success"].samples[0].value == 1


def test_promtool_check_metrics(tmp_path: Path, debian_tools: dict[str, str]) -> None:
    text = exposition(tmp_path)
    r = run([tool("promtool"), "check", "metrics"], stdin=text)
    findings = {line.strip() for line in (r.stdout + r.stderr).splitlines() if line.strip()}
    assert findings == DEPRECATED_LINT, findings
    canonical_only = "\n".join(
        line
        for line in text.splitlines()
        if "mqlite_queue_total" not in line and "mqlite_queue_oldest_message_age_ms" not in line
    )
    r = run([tool("promtool"), "check", "metrics"], stdin=canonical_only + "\n")
    assert r.returncode == 0, r.stdout + r.stderr
    # The check can fail: a counter without HELP/_total is refused.
    r = run([tool("promtool"), "check", "metrics"], stdin="# TYPE broken counter\nbroken 1\n")
    assert r.returncode != 0


@pytest.mark.parametrize("name", ["mqlite_queue_total", "mqlite_messages_completed_total"])
def test_aliases_read_the_canonical_values(tmp_path: Path, name: str) -> None:
    got = families(exposition(tmp_path))
    if name == "mqlite_queue_total":
        alias = {s.labels["queue"]: s.value for s in got[name].samples}
        canon = {s.labels["queue"]: s.value for s in got["mqlite_queue_retained_messages"].samples}
    else:
        alias = {
            s.labels["queue"]: s.value
            for s in got["mqlite_messages_completed"].samples
            if s.name.endswith("_total")
        }
        canon = {
            s.labels["queue"]: s.value
            for s in got["mqlite_message_events"].samples
            if s.labels["event"] == "completed" and s.name.endswith("_total")
        }
    assert alias == canon and alias


def test_queue_gauges_are_written_byte_for_byte_as_prometheus_client_would(
    tmp_path: Path,
) -> None:
    """The fast per-queue path is the library's format, not a second one: the same
    families through generate_latest give the same bytes, for escaping-worthy label
    values and float formatting (exponents, fractions, zero) included."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    from mqlite.engine.observation import MessageEffect, QueueGauges

    queues = (
        QueueGauges("orders", "queue", 3, 1, 0, 2, 5, 0, 11, 12_500),
        QueueGauges('we"ird\\name\nx', "subscription", 0, 0, 0, 0, 0, 0, 0, 0),
        QueueGauges("big", "queue", 12_345_678, 0, 7, 0, 0, 7, 12_345_685, 86_400_001),
        # Past the slices the renderer pauses between (metrics_queues.YIELD_EVERY).
        *(QueueGauges(f"q{i:04d}", "queue", i, 0, 0, 0, 0, 0, i, i) for i in range(600)),
    )
    messages = tuple(
        MessageEffect(q.queue, event, n)
        for q in sorted(queues, key=lambda q: q.queue)
        for event, n in (("abandoned", 0), ("completed", 12_345_678), ("enqueued", 3))
    )

    class Reference:
        def collect(self) -> Any:
            by_state = GaugeMetricFamily(*mq.BY_STATE, labels=["queue", "state"])
            for q in queues:
                for state in mq.STATES:
                    by_state.add_metric([q.queue, state], getattr(q, state))
            yield by_state
            for name, doc, value_of in mq.QUEUE_FAMILIES:
                fam = GaugeMetricFamily(name, doc, labels=["queue"])
                for q in queues:
                    fam.add_metric([q.queue], value_of(q))
                yield fam

    class ReferenceEvents:
        def collect(self) -> Any:
            events = CounterMetricFamily(*mq.EVENTS, labels=["queue", "event"])
            completed = CounterMetricFamily(*mq.COMPLETED, labels=["queue"])
            for m in messages:
                events.add_metric([m.queue, m.event], m.count)
                if m.event == "completed":
                    completed.add_metric([m.queue], m.count)
            yield from (events, completed)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Reference())  # type: ignore[arg-type]
    assert mq.queue_gauges_text(queues).encode() == generate_latest(registry)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ReferenceEvents())  # type: ignore[arg-type]
    assert mq.message_events_text(messages).encode() == generate_latest(registry)


def test_replication_gauges_absent_unless_litestream_answered(tmp_path: Path) -> None:
    """Disabled: only ``mqlite_replication_enabled 0``; unavailable (Litestream silent):
    enabled 1 and no lag (unknown is absent, never zero); available: the measured lag."""
    got = families(exposition(tmp_path))
    assert got["mqlite_replication_lag_seconds"].samples[0].value == 1.5
    assert got["mqlite_replication_enabled"].samples[0].value == 1
    engine = Engine(f"file:{tmp_path / 'other.db'}", clock=FakeClock())
    try:
        observed = engine.observe()
    finally:
        engine.close()
    for rep, enabled in ((REPLICATION_DISABLED, 0), (Replication("unavailable", None, None), 1)):
        text = metrics.render(dataclasses.replace(observed, replication=rep)).decode()
        fams = families(text)
        assert fams["mqlite_replication_enabled"].samples[0].value == enabled
        assert "mqlite_replication_lag_seconds" not in fams
        assert "mqlite_replication_last_sync_timestamp_seconds" not in fams

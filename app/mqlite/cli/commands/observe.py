"""``mqlite observe``: the canonical observation (cli "observe").

``--output json`` prints the snapshot exactly as the HTTP route answers it. The text form
is every section as tables; counters that are still zero are left out of the tables and
counted instead, and an unavailable collection says so instead of showing queues.
"""

from __future__ import annotations

import argparse
from typing import Any

from mqlite import wire
from mqlite.cli.context import Context
from mqlite.cli.output import size_text, when_text
from mqlite.wire.observability import QueueGaugesJSON


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("observe", parents=[common], help="canonical observation")
    p.set_defaults(handler=observe, read_only=True)


def _seconds(value: float | None) -> str:
    if value is None:
        return "unavailable"
    return f"{value * 1000:.3f}ms" if value < 1 else f"{value:.3f}s"


def observe(ctx: Context) -> int:
    r: wire.ObserveResponse = ctx.client.observe()
    if ctx.out.json:
        ctx.out.wire(wire.OBSERVE, r)
        return 0
    out = ctx.out
    _summary(out, r)
    _queues(out, r)
    effects = [(m.queue, m.event, m.count) for m in r.messages if m.count]
    _section(out, "message effects", ("QUEUE", "EVENT", "COUNT"), effects, len(r.messages))
    ops = r.storage.operations
    rows = [
        (s.operation, s.outcome, s.error_code or "-", s.count, s.retries)
        for s in ops
        if s.count or s.retries
    ]
    headers = ("OPERATION", "OUTCOME", "ERROR", "COUNT", "RETRIES")
    _section(out, "storage operations", headers, rows, len(ops))
    p = r.storage.pool
    out.line(
        f"pool: max_open={p.max_open} open={p.open} in_use={p.in_use} idle={p.idle} "
        f"waits={p.wait_count}"
    )
    _maintenance(out, r)
    out.line("filter failures: " + ", ".join(f"{f.stage}={f.count}" for f in r.filters))
    if r.http.state == "available":
        requests = [
            (q.rpc, q.code, q.count, _seconds(q.duration_seconds))
            for q in r.http.requests
            if q.count
        ]
        columns = ("RPC", "CODE", "COUNT", "TOTAL TIME")
        _section(out, "requests", columns, requests, len(r.http.requests))
        outcomes = ", ".join(f"{a.outcome}={a.count}" for a in r.http.authentication)
        out.line(f"authentication: {outcomes}")
    return 0


def _summary(out: Any, r: wire.ObserveResponse) -> None:
    c, rt = r.collection, r.runtime
    size = size_text(rt.db_size_bytes) if rt.db_size_available else "unavailable"
    state = c.state + (f" ({c.error_code})" if c.error_code else "")
    for key, value in (
        ("version", r.version),
        ("backend", r.backend),
        ("access", r.access),
        ("sampled", when_text(r.sampled_at_ms)),
        ("started", when_text(r.started_at_ms)),
        ("collection", state),
        ("last success", when_text(c.last_success_at_ms)),
        ("collected in", _seconds(c.duration_seconds)),
        ("schema", rt.schema_version),
        ("read probe", _seconds(rt.ping_seconds if rt.read_available else None)),
        ("footprint", size),
        ("http", r.http.state),
    ):
        out.line(f"{key + ':':<14} {value}")
    out.line()


def _queues(out: Any, r: wire.ObserveResponse) -> None:
    if r.queues is None:
        out.line("queues: unavailable (the collection failed; this is not zero messages)")
        return
    out.line(f"queues: {r.queue_count}, subscriptions: {r.subscription_count}")
    if not r.queues:
        return
    headers = ("QUEUE", "KIND", "ACTIVE", "LOCKED", "DEFERRED", "SCHEDULED", "DLQ")
    out.table(
        (*headers, "TOTAL", "UNEXPECTED", "OLDEST"),
        (
            (
                *(q.queue, q.kind, q.active, q.locked, q.deferred, q.scheduled, q.dead_lettered),
                *(q.total, q.unexpected, _oldest(q)),
            )
            for q in r.queues
        ),
    )


def _oldest(q: QueueGaugesJSON) -> str:
    """The age of the oldest active or locked message; ``-`` when there is none (only
    scheduled, deferred or dead-lettered messages have no age to show, not ``0.0s``)."""
    if q.active + q.locked == 0:
        return "-"
    return f"{q.oldest_message_age_ms / 1000:.1f}s"


def _maintenance(out: Any, r: wire.ObserveResponse) -> None:
    out.line()
    headers = ("TASK", "ENABLED", "LAST", "OK", "ERRORS", "INTERRUPTED", "STREAK")
    out.table(
        (*headers, "LAST SUCCESS"),
        (
            (
                *(t.task, "yes" if t.enabled else "no", t.last_outcome),
                *(t.runs - t.failures - t.interrupted, t.failures, t.interrupted),
                t.consecutive_failures,
                when_text(t.last_success_at_ms),
            )
            for t in r.maintenance
        ),
    )
    for t in r.maintenance:
        for d in t.diagnostics:
            out.line(
                f"  {t.task}/{d.step} at {when_text(d.at_ms)}: {d.category}: "
                f"{d.explanation} [{d.fingerprint}]"
            )


def _section(out: Any, title: str, headers: tuple[str, ...], rows: list[Any], total: int) -> None:
    out.line()
    out.line(f"{title}: {len(rows)} non-zero of {total}")
    if rows:
        out.table(headers, rows)

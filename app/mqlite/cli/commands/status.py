"""``mqlite status`` and ``mqlite metrics``: the quick read-only snapshots -- the
broker's backend and size, one queue's counters (``observe.py`` has the full
observation; ``queues.py`` edits the catalog)."""

from __future__ import annotations

import argparse
from typing import Any

from mqlite import wire
from mqlite.cli.context import Context
from mqlite.cli.output import size_text, uptime_text
from mqlite.types import Stats


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("metrics", parents=[common], help="queue counters")
    p.add_argument("queue")
    p.set_defaults(handler=metrics, read_only=True)
    p = sub.add_parser("status", parents=[common], help="backend snapshot")
    p.set_defaults(handler=status, read_only=True)


def metrics(ctx: Context) -> int:
    s: Stats = ctx.client.stats(ctx.args.queue)
    if ctx.out.json:
        ctx.out.wire(wire.STATS, wire.MetricsResponse.of(s))
        return 0
    ctx.out.line(
        f"queue={s.queue} active={s.active} locked={s.locked} deferred={s.deferred} "
        f"scheduled={s.scheduled} dead_lettered={s.dead_lettered} total={s.total} "
        + (f"oldest={s.oldest_message_age_ms}ms" if s.active + s.locked else "oldest=-")
    )
    return 0


def status(ctx: Context) -> int:
    resp: wire.StatusResponse = ctx.client.status()
    if ctx.out.json:
        ctx.out.wire(wire.STATUS, resp)
        return 0
    mode = f"client of {ctx.target.endpoint}" if ctx.target.remote else "embedded"
    ctx.out.line(f"mode:           {mode}")
    for key in ("version", "backend", "location", "schema_version", "ping_ms"):
        ctx.out.line(f"{key + ':':<15} {getattr(resp, key)}")
    ctx.out.line(f"{'db_size:':<15} {size_text(resp.db_size_bytes)} ({resp.db_size_bytes} bytes)")
    ctx.out.line(f"{'queues:':<15} {resp.queues}")
    ctx.out.line(f"{'subscriptions:':<15} {resp.subscriptions}")
    if ctx.target.remote:
        ctx.out.line(f"{'uptime:':<15} {uptime_text(resp.uptime_ms)}")
        ctx.out.line(f"{'auth:':<15} {'on' if resp.auth else 'off'}")
    return 0

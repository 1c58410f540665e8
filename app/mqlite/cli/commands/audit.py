"""``mqlite audit``: who changed what (the audit trail, docs/operations.md).

One page of ``ListAudit``, oldest first, narrowed by ``--queue`` and ``--since`` (a
duration back from now: ``1h``, ``7d``); a full page ends with the command that shows the
next, so a long trail is read page by page rather than all at once.
"""

from __future__ import annotations

import argparse
from typing import Any

from mqlite import wire
from mqlite.cli import args as a
from mqlite.cli.context import Context
from mqlite.cli.output import when_text
from mqlite.clock import SYSTEM_CLOCK


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("audit", parents=[common], help="show the audit trail (who changed what)")
    p.add_argument("--queue", default="", help="only this queue's or topic's changes")
    p.add_argument(
        "--since", type=a.duration, default=0, metavar="DURATION", help="e.g. 1h, 7d (0 = all)"
    )
    p.add_argument("--after-id", type=a.non_negative, default=0, help="entries after this id")
    p.add_argument("--limit", type=a.non_negative, default=100, help="1..1000 (100)")
    p.set_defaults(handler=show, read_only=True)


def show(ctx: Context) -> int:
    g = ctx.args
    since_ms = SYSTEM_CLOCK.now_ms() - g.since if g.since else 0
    entries = ctx.client.list_audit(g.after_id, g.limit, g.queue, max(since_ms, 0))
    ctx.out.listing(
        wire.LIST_AUDIT,
        wire.ListAuditResponse.of(entries),
        entries,
        "no audit entries",
        ("ID", "AT", "ACTOR", "ACTION", "QUEUE", "REQUEST", "DETAIL"),
        (
            (e.id, when_text(e.at_ms), e.actor, e.action, e.queue or "-", e.request_id or "-",
             e.detail)
            for e in entries
        ),
    )  # fmt: skip
    if not ctx.out.json and len(entries) >= (g.limit or 100):
        nxt = f"mqlite audit --after-id {entries[-1].id} --limit {g.limit}"
        if g.queue:
            nxt += f" --queue {g.queue}"
        ctx.out.line(f"next page: {nxt}")
    return 0

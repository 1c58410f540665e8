"""Dead-letter operations: ``redrive`` and ``purge-dlq``, in chunks with a progress bar.

Working in chunks (each its own transaction) keeps a big redrive or purge from holding
the single writer for long, and gives the bar something to count.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from mqlite import wire
from mqlite.cli import args as a
from mqlite.cli.context import Context, UsageError
from mqlite.cli.output import Progress

CHUNK = 500


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("redrive", parents=[common], help="move dead letters back to active")
    p.add_argument("queue")
    p.add_argument("--to", default="", help="target queue (default: back to source)")
    p.add_argument("--max", type=a.non_negative, default=0, help="max messages (0 = all)")
    p.add_argument("--older-than", type=a.positive_duration, metavar="DURATION", default=0)
    p.set_defaults(handler=redrive)

    p = sub.add_parser("purge-dlq", parents=[common], help="delete dead letters")
    p.add_argument("queue")
    p.add_argument("--max", type=a.non_negative, default=None, help="max messages to delete")
    p.add_argument(
        "--older-than",
        type=a.positive_duration,
        metavar="DURATION",
        default=None,
        help="minimum 1ms",
    )
    p.add_argument("--all", action="store_true", help="delete the entire DLQ")
    p.set_defaults(handler=purge_dlq)


def _chunked(ctx: Context, label: str, limit: int, step: Callable[[int], int]) -> int:
    """Call ``step(n)`` until it moves fewer than ``n`` or ``limit`` (0 = none) is reached."""
    try:
        backlog = int(ctx.client.stats(ctx.args.queue).dead_lettered)
    except Exception:
        backlog = 0
    bar = Progress(label, min(backlog, limit) if limit else backlog)
    done = 0
    try:
        while True:
            n = CHUNK if not limit else min(CHUNK, limit - done)
            got = int(step(n))
            done += got
            bar.update(done)
            if got < n or (limit and done >= limit):
                return done
    finally:
        bar.finish()


def redrive(ctx: Context) -> int:
    g = ctx.args
    c = ctx.client
    moved = _chunked(
        ctx,
        "redrive",
        g.max,
        lambda n: c.redrive(g.queue, g.to or None, max=n, older_than_ms=g.older_than),
    )
    text = f"redrove {moved} message(s) from {g.queue} to {g.to or g.queue}"
    ctx.out.answer(wire.REDRIVE, wire.RedriveResponse(moved), text)
    return 0


def purge_dlq(ctx: Context) -> int:
    g = ctx.args
    bounded = bool(g.max) or bool(g.older_than)
    if g.all and (g.max is not None or g.older_than is not None):
        raise UsageError("--all cannot be combined with --max or --older-than")
    if not g.all and not bounded:
        raise UsageError(
            "an unbounded purge deletes the entire DLQ: pass --all, or bound it with "
            "--max / --older-than"
        )
    c = ctx.client
    purged = _chunked(
        ctx,
        "purge",
        g.max or 0,
        lambda n: c.purge(g.queue, max=n, older_than_ms=g.older_than or 0),
    )
    text = f"purged {purged} dead letter(s) from {g.queue}"
    ctx.out.answer(wire.PURGE, wire.PurgeResponse(purged), text)
    return 0

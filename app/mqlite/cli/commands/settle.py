"""Settle a message received earlier with ``receive --no-ack``: ``<queue> <seq> <token>``.

In embedded mode each invocation reopens the database and reclaims orphaned locks, so a
lock only survives between commands when a broker holds it (client mode).
"""

from __future__ import annotations

import argparse
from typing import Any

from mqlite import wire
from mqlite.cli import args as a
from mqlite.cli.context import Context
from mqlite.cli.output import when_text

_HELP = {
    "complete": "settle as done",
    "abandon": "release for retry",
    "reject": "dead-letter it",
    "defer": "set aside for receive-deferred",
    "renew": "extend the lock lease",
}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    for verb, about in _HELP.items():
        p = sub.add_parser(verb, parents=[common], help=about)
        p.add_argument("queue")
        p.add_argument("seq", type=a.seq)
        p.add_argument("lock_token", metavar="lock-token")
        if verb == "abandon":
            p.add_argument(
                "--delay",
                type=a.duration,
                metavar="DURATION",
                default=0,
                help="redeliver after this (0 = the queue's retry policy, or at once)",
            )
            p.add_argument(
                "--error",
                default="",
                help="why it failed (at most 4 KiB): kept as the message's last error",
            )
        if verb == "reject":
            p.add_argument("--reason", default="", help="dead-letter reason")
            p.add_argument("--detail", default="", help="dead-letter description")
        p.set_defaults(handler=settle, verb=verb)


PAST = {
    "complete": "completed",
    "abandon": "abandoned",
    "reject": "rejected",
    "defer": "deferred",
    "renew": "renewed",
}


def settle(ctx: Context) -> int:
    g = ctx.args
    c = ctx.client
    until: object = None
    if g.verb == "complete":
        c.complete(g.queue, g.seq, g.lock_token)
    elif g.verb == "abandon":
        c.abandon(g.queue, g.seq, g.lock_token, g.delay, g.error)
    elif g.verb == "reject":
        c.reject(g.queue, g.seq, g.lock_token, g.reason, g.detail)
    elif g.verb == "defer":
        c.defer(g.queue, g.seq, g.lock_token)
    else:
        until = c.renew(g.queue, g.seq, g.lock_token)
    if ctx.out.json:
        ctx.out.wire(wire.COMPLETE, wire.OkResponse())
        return 0
    text = f"{PAST[g.verb]} {g.queue} seq={g.seq}"
    if isinstance(until, int) and until > 0:
        text += f" locked-until={when_text(until)}"
    ctx.out.line(text)
    return 0

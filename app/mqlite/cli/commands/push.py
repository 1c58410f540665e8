"""``push set|list|rm|pause|resume``: a queue's push target (docs/push.md). The secret is
never an argument (argv is visible to every user of the host): ``set`` prints a generated
one once, ``--secret-file`` reads one to rotate to."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mqlite import wire
from mqlite.cli import args as a
from mqlite.cli.context import Context, Failure, UsageError
from mqlite.cli.output import when_text
from mqlite.types import PushTarget


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    push = sub.add_parser("push", help="push targets: the broker POSTs a queue's messages")
    verbs = push.add_subparsers(dest="push_command", metavar="<set|list|rm|pause|resume>")
    push.set_defaults(handler=_missing)

    p = verbs.add_parser("set", parents=[common], help="bind (or update) a queue's push target")
    p.add_argument("queue")
    p.add_argument("url", help="https://... (http:// only to MQLITE_PUSH_ALLOW_NETWORKS)")
    p.add_argument("--max-in-flight", type=int, default=8, help="concurrent POSTs, 1..256 (8)")
    p.add_argument(
        "--timeout", type=a.positive_duration, default=10_000, help="one POST's deadline (10s)"
    )
    p.add_argument("--secret-file", help="a file holding the whsec_ secret to use (rotate)")
    p.add_argument("--paused", action="store_true", help="keep it without delivering")
    p.set_defaults(handler=set_push)

    p = verbs.add_parser("list", parents=[common], help="push targets with their state")
    p.set_defaults(handler=list_pushes)

    p = verbs.add_parser("rm", parents=[common], help="unbind a queue's push target")
    p.add_argument("queue")
    p.set_defaults(handler=rm)

    for name, paused in (("pause", True), ("resume", False)):
        p = verbs.add_parser(name, parents=[common], help=f"{name} a queue's push target")
        p.add_argument("queue")
        p.set_defaults(handler=_pause if paused else _resume)


def _missing(ctx: Context) -> int:
    raise UsageError("push needs a subcommand: set, list, rm, pause or resume")


def set_push(ctx: Context) -> int:
    g = ctx.args
    secret = ""
    if g.secret_file:
        try:
            secret = Path(g.secret_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(f"--secret-file: {exc.strerror or exc}") from None
    p = ctx.client.create_push(g.queue, g.url, secret, g.max_in_flight, g.timeout, g.paused)
    if ctx.out.json:
        ctx.out.wire(wire.CREATE_PUSH, wire.PushResponse.of(p))
        return 0
    ctx.out.line(
        f"push {p.queue} -> {p.url} (max_in_flight {p.max_in_flight}, "
        f"timeout {p.timeout_ms / 1000:g} s, {p.status})"
    )
    if p.secret:
        ctx.out.line(f"secret (shown this once, keep it): {p.secret}")
    return 0


def list_pushes(ctx: Context) -> int:
    pushes = ctx.client.list_pushes()
    ctx.out.listing(
        wire.LIST_PUSHES,
        wire.ListPushesResponse.of(pushes),
        pushes,
        "no push targets",
        ("QUEUE", "URL", "STATUS", "IN FLIGHT", "LAST", "DELIVERED", "FAILED", "LAST ERROR"),
        (
            (
                p.queue,
                p.url,
                p.status,
                p.max_in_flight,
                p.last_status or "-",
                p.delivered,
                p.failed,
                _error(p),
            )
            for p in pushes
        ),
    )
    return 0


def _error(p: PushTarget) -> str:
    if not p.last_error:
        return ""
    due = f" (next {when_text(p.next_attempt_at_ms)})" if p.next_attempt_at_ms else ""
    return p.last_error + due


def rm(ctx: Context) -> int:
    deleted = ctx.client.delete_push(ctx.args.queue)
    if ctx.out.json:
        ctx.out.wire(wire.DELETE_PUSH, wire.DeletePushResponse(deleted))
        return 0
    if not deleted:
        raise Failure(f"queue {ctx.args.queue!r} has no push target")
    ctx.out.line(f"deleted the push target of {ctx.args.queue}")
    return 0


def _pause(ctx: Context) -> int:
    return _set_paused(ctx, True)


def _resume(ctx: Context) -> int:
    return _set_paused(ctx, False)


def _set_paused(ctx: Context, paused: bool) -> int:
    """CreatePush with the target's own settings and the flag (its secret is kept)."""
    found = [p for p in ctx.client.list_pushes() if p.queue == ctx.args.queue]
    if not found:
        raise Failure(f"queue {ctx.args.queue!r} has no push target")
    p = found[0]
    p = ctx.client.create_push(p.queue, p.url, "", p.max_in_flight, p.timeout_ms, paused)
    ctx.out.answer(wire.CREATE_PUSH, wire.PushResponse.of(p), f"push {p.queue}: {p.status}")
    return 0

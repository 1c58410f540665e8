"""``cron add|list|rm``: cron schedules in the broker (docs/cron.md). ``schedule`` is
taken: it schedules one message."""

from __future__ import annotations

import argparse
from typing import Any

from mqlite import wire
from mqlite.cli import args as a
from mqlite.cli.context import Context, Failure, UsageError
from mqlite.cli.output import body_preview, when_text
from mqlite.types import OutMessage, Schedule


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    cron = sub.add_parser("cron", help="cron schedules: a message to a queue at every slot")
    verbs = cron.add_subparsers(dest="cron_command", metavar="<add|list|rm>")
    cron.set_defaults(handler=_missing)

    p = verbs.add_parser("add", parents=[common], help="create or replace a schedule")
    p.add_argument("name", help="1..128 of A-Z a-z 0-9 . _ -")
    p.add_argument("cron", help="'m h dom mon dow' (quote it) or @hourly/@daily/...")
    p.add_argument("queue", help="a queue, or a topic (fans out)")
    p.add_argument("body", nargs="?", help="message body; - reads stdin")
    p.add_argument("--file", help="read the body from a file")
    p.add_argument("--tz", default="UTC", help="IANA zone the cron is read in (UTC)")
    p.add_argument("--subject", default="", help="subject (label)")
    p.add_argument("--content-type", default="", help="the body's media type")
    p.add_argument("--group", default="", help="group id (ordering / session key)")
    p.add_argument(
        "--prop",
        action="append",
        default=[],
        type=a.prop,
        metavar="K=V",
        help="a property (repeatable)",
    )
    p.add_argument(
        "--catch-up",
        choices=("latest", "skip"),
        default="latest",
        help="after downtime: send the latest missed slot once (latest) or none (skip)",
    )
    p.add_argument("--paused", action="store_true", help="keep it without firing")
    p.set_defaults(handler=add)

    p = verbs.add_parser("list", parents=[common], help="list schedules with next/last fire")
    p.set_defaults(handler=list_schedules)

    p = verbs.add_parser("rm", parents=[common], help="delete a schedule")
    p.add_argument("name")
    p.set_defaults(handler=rm)


def _missing(ctx: Context) -> int:
    raise UsageError("cron needs a subcommand: add, list or rm")


def add(ctx: Context) -> int:
    g = ctx.args
    body = a.read_body(g.body, g.file, required=False) or b""
    msg = OutMessage(
        body, group_id=g.group, subject=g.subject, content_type=g.content_type,
        properties=dict(g.prop),
    )  # fmt: skip
    s = ctx.client.create_schedule(g.name, g.cron, g.queue, msg, g.tz, g.catch_up, g.paused)
    text = f"schedule {s.name}: {s.cron} ({s.timezone}) -> {s.queue}, {_next(s)}"
    ctx.out.answer(wire.CREATE_SCHEDULE, wire.ScheduleResponse.of(s), text)
    return 0


def _next(s: Schedule) -> str:
    if s.status != "active":
        return s.status
    return f"next {when_text(s.next_fire_at_ms)}" if s.next_fire_at_ms else "no future slot"


def list_schedules(ctx: Context) -> int:
    schedules = ctx.client.list_schedules()
    ctx.out.listing(
        wire.LIST_SCHEDULES,
        wire.ListSchedulesResponse.of(schedules),
        schedules,
        "no schedules",
        ("NAME", "CRON", "TZ", "QUEUE", "STATUS", "NEXT", "LAST", "FIRED", "BODY"),
        (
            (
                s.name,
                s.cron,
                s.timezone,
                s.queue,
                s.status,
                when_text(s.next_fire_at_ms),
                when_text(s.last_fired_at_ms),
                s.fired,
                body_preview(s.message.body, 24),
            )
            for s in schedules
        ),
    )
    return 0


def rm(ctx: Context) -> int:
    deleted = ctx.client.delete_schedule(ctx.args.name)
    if ctx.out.json:
        ctx.out.wire(wire.DELETE_SCHEDULE, wire.DeleteScheduleResponse(deleted))
        return 0
    if not deleted:
        raise Failure(f"no schedule {ctx.args.name!r}")
    ctx.out.line(f"deleted schedule {ctx.args.name}")
    return 0

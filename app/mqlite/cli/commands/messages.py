"""Producing and browsing: send, schedule, cancel, peek."""

from __future__ import annotations

import argparse
from typing import Any

from mqlite import wire
from mqlite.cli import args as a
from mqlite.cli.context import Context
from mqlite.cli.output import body_preview, peeked_json, when_text
from mqlite.clock import SYSTEM_CLOCK
from mqlite.types import Message, OutMessage, State


def _message_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue")
    p.add_argument("body", nargs="?", help="message body; - reads stdin")
    p.add_argument("--file", help="read the body from a file")
    p.add_argument("--message-id", default="", help="dedup / idempotency key")
    p.add_argument("--group", default="", help="group id (ordering / session key)")
    p.add_argument("--subject", default="", help="subject (label)")
    p.add_argument("--reply-to", default="", help="reply-to address")
    p.add_argument("--correlation-id", default="", help="correlation id (request/reply)")
    p.add_argument("--content-type", default="", help="content type, e.g. application/json")
    p.add_argument(
        "--prop",
        action="append",
        default=[],
        type=a.prop,
        metavar="K=V",
        help='application property (repeatable): what filters read as properties["K"]',
    )
    p.add_argument(
        "--ttl", type=a.duration, metavar="DURATION", default=None, help="per-message TTL"
    )


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("send", parents=[common], help="enqueue a message")
    _message_flags(p)
    p.set_defaults(handler=send)

    p = sub.add_parser("schedule", parents=[common], help="enqueue for future delivery")
    _message_flags(p)
    p.add_argument("--at", required=True, help="RFC3339 time or a duration from now")
    p.set_defaults(handler=schedule)

    p = sub.add_parser("cancel", parents=[common], help="cancel a scheduled message")
    p.add_argument("queue")
    p.add_argument("seq", type=a.seq)
    p.set_defaults(handler=cancel)

    p = sub.add_parser("peek", parents=[common], help="browse without locking")
    p.add_argument("queue")
    p.add_argument("--state", choices=[s.value for s in State], default=None)
    p.add_argument("--from", dest="from_seq", type=a.non_negative, default=0)
    p.add_argument("--max", type=a.non_negative, default=16)
    p.set_defaults(handler=peek, read_only=True)


def _out_message(ctx: Context) -> OutMessage:
    g = ctx.args
    body = a.read_body(g.body, g.file)
    assert body is not None
    return OutMessage(
        body=body,
        message_id=g.message_id,
        group_id=g.group,
        subject=g.subject,
        correlation_id=g.correlation_id,
        reply_to=g.reply_to,
        content_type=g.content_type,
        properties=dict(g.prop),  # a repeated key: the last one wins
    )


def send(ctx: Context) -> int:
    msg = _out_message(ctx)
    seq = int(ctx.client.send_one(ctx.args.queue, msg, ttl_ms=ctx.args.ttl))
    # A single send answers seq 0 only for a topic none of whose filters took it.
    unmatched = f"published to topic {ctx.args.queue}: it matched no subscription (not stored)"
    if ctx.out.json:
        ctx.out.wire(wire.SEND, wire.SendResponse((seq,)))
        if seq == 0:
            ctx.out.note(f"note: {unmatched}")
    else:
        ctx.out.line(unmatched if seq == 0 else f"sent {ctx.args.queue} seq={seq}")
    return 0


def schedule(ctx: Context) -> int:
    msg = _out_message(ctx)
    at_ms = a.at_time(ctx.args.at, SYSTEM_CLOCK.now_ms())
    seqs = [int(s) for s in ctx.client.schedule(ctx.args.queue, [msg], at_ms, ctx.args.ttl)]
    text = f"scheduled {ctx.args.queue} seq={seqs[0]} at={when_text(at_ms)}"
    ctx.out.answer(wire.SCHEDULE, wire.SendResponse(tuple(seqs)), text)
    return 0


def cancel(ctx: Context) -> int:
    ctx.client.cancel(ctx.args.queue, ctx.args.seq)
    text = f"cancelled {ctx.args.queue} seq={ctx.args.seq}"
    ctx.out.answer(wire.CANCEL, wire.OkResponse(), text)
    return 0


def peek(ctx: Context) -> int:
    g = ctx.args
    msgs: list[Message] = list(
        ctx.client.peek(g.queue, state=g.state, from_seq=g.from_seq, max=g.max)
    )
    if ctx.out.json:
        ctx.out.obj([peeked_json(m) for m in msgs])
        return 0
    if not msgs:
        ctx.out.line("no messages")
        return 0
    ctx.out.table(
        (
            "SEQ",
            "STATE",
            "DELIVERIES",
            "ENQUEUED",
            "VISIBLE-AT",
            "GROUP",
            "MESSAGE-ID",
            "SUBJECT",
            "PROPERTIES",
            "BODY",
        ),
        (
            (
                m.seq_number,
                m.state or "-",
                m.delivery_count,
                when_text(m.enqueued_at_ms),
                visible_text(m),
                m.group_id or "-",
                m.message_id or "-",
                m.subject or "-",
                props_text(m.properties),
                body_preview(m.body)
                + (f"  [{m.dead_letter_reason}]" if m.dead_letter_reason else "")
                + (f"  last error: {error_preview(m.last_error)}" if m.last_error else ""),
            )
            for m in msgs
        ),
    )
    return 0


def props_text(props: dict[str, str]) -> str:
    """``k=v,k=v`` (the form ``--prop`` and test-filter take), "-" when there are none."""
    return ",".join(f"{k}={v}" for k, v in sorted(props.items())) or "-"


def error_preview(text: str, limit: int = 80) -> str:
    """A last error on one table line: whitespace folded, clipped to ``limit`` chars."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def visible_text(m: Message) -> str:
    """When a parked message becomes receivable: a scheduled one at its time, a deferred
    one only when fetched by seq; "-" for the rest (already visible, or locked)."""
    if m.state == State.SCHEDULED:
        return when_text(m.visible_at_ms)
    if m.state == State.DEFERRED:
        return "by seq only"
    return "-"

"""Queue and topic administration: create/delete queues, (un)subscribe, list, and
test-filter. The read-only snapshots (``metrics``, ``status``) are ``status.py``'s."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from mqlite import wire
from mqlite.cli import args as a
from mqlite.cli.context import Context, Failure, UsageError
from mqlite.cli.output import ms_text
from mqlite.types import FilterTestResult, OrderingMode, OutMessage, QueueConfig


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("create-queue", parents=[common], help="create or update a queue")
    p.add_argument("name")
    p.add_argument(
        "--lock",
        type=a.duration,
        metavar="DURATION",
        default=0,
        help="Peek-Lock duration (0 → 30s)",
    )
    p.add_argument("--max-delivery", type=a.non_negative, default=0, help="0 → 10")
    p.add_argument(
        "--ttl",
        type=a.duration,
        metavar="DURATION",
        default=0,
        help="default message TTL (0 = none)",
    )
    p.add_argument(
        "--dedup", type=a.duration, metavar="DURATION", default=0, help="dedup window (0 = off)"
    )
    p.add_argument("--ordering", choices=[m.value for m in OrderingMode], default="standard")
    p.add_argument(
        "--dlq-max-age", type=a.duration, metavar="DURATION", default=0, help="0 inherits"
    )
    p.add_argument("--dlq-max-count", type=a.signed, default=0, help="0 inherits, -1 unbounded")
    p.add_argument("--dlq-max-bytes", type=a.signed, default=0, help="0 inherits, -1 unbounded")
    p.add_argument(
        "--retry-initial",
        type=a.duration,
        metavar="DURATION",
        default=0,
        help="retry policy: wait after the first failed delivery (0 = off: at once)",
    )
    p.add_argument(
        "--retry-max",
        type=a.duration,
        metavar="DURATION",
        default=QueueConfig().retry_max_delay_ms,
        help="the retry delay's cap (default 15m)",
    )
    p.add_argument(
        "--retry-multiplier",
        type=float,
        metavar="X",
        default=QueueConfig().retry_multiplier,
        help="each further failure multiplies the delay (1..1000, default 2)",
    )
    p.add_argument(
        "--retry-jitter",
        type=float,
        metavar="J",
        default=0.0,
        help="0..1: draw each delay from [d*(1-J), d] (default 0)",
    )
    p.add_argument(
        "--if-absent",
        action="store_true",
        help="create only if the name is free; an existing queue is left as it is",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="with --if-absent: fail (exit 1) if the existing queue's config differs",
    )
    p.set_defaults(handler=create_queue)

    p = sub.add_parser("delete-queue", parents=[common], help="delete an empty queue")
    p.add_argument("name")
    p.add_argument("--generation", help="only delete this generation of the name")
    p.set_defaults(handler=delete_queue)

    for name in ("subscribe", "create-subscription"):
        p = sub.add_parser(name, parents=[common], help="create a topic subscription")
        p.add_argument("topic")
        p.add_argument("name")
        p.add_argument("--expr", default="", help="filter predicate (empty = match all)")
        p.set_defaults(handler=subscribe)

    p = sub.add_parser("unsubscribe", parents=[common], help="remove a subscription")
    p.add_argument("topic")
    p.add_argument("name")
    p.set_defaults(handler=unsubscribe)

    p = sub.add_parser("list", parents=[common], help="list queues")
    p.set_defaults(handler=list_queues, read_only=True)
    p = sub.add_parser("list-subscriptions", parents=[common], help="list subscriptions")
    p.set_defaults(handler=list_subscriptions, read_only=True)

    p = sub.add_parser("test-filter", parents=[common], help="dry-run a subscription filter")
    p.add_argument("expr")
    p.add_argument("body", nargs="?", help="sample body (- for stdin)")
    p.add_argument("--file", help="sample body from a file")
    p.add_argument("--subject", default="")
    p.add_argument("--group", default="")
    p.add_argument(
        "--prop", type=a.prop_list, default=[], metavar="K=V,K=V", help="sample properties"
    )
    p.set_defaults(handler=test_filter, read_only=True)


def create_queue(ctx: Context) -> int:
    g = ctx.args
    cfg = QueueConfig(
        lock_duration_ms=g.lock,
        max_delivery_count=g.max_delivery,
        default_ttl_ms=g.ttl,
        dedup_window_ms=g.dedup,
        ordering_mode=g.ordering,
        dlq_max_age_ms=g.dlq_max_age,
        dlq_max_count=g.dlq_max_count,
        dlq_max_bytes=g.dlq_max_bytes,
        retry_initial_delay_ms=g.retry_initial,
        retry_multiplier=g.retry_multiplier,
        retry_max_delay_ms=g.retry_max,
        retry_jitter=g.retry_jitter,
    )
    if g.strict and not g.if_absent:
        raise UsageError("--strict goes with --if-absent")
    if g.if_absent:
        return _ensure_queue(ctx, cfg)
    info = ctx.client.create_queue(g.name, cfg)
    if ctx.out.json:
        ctx.out.obj(
            wire.json_object(wire.QueueInfoJSON.of(info))
        )  # the ListQueues entry: wire field names
        return 0
    c = info.config
    ctx.out.line(
        f"queue {info.name} ready: lock={ms_text(c.lock_duration_ms)} "
        f"max-delivery={c.max_delivery_count} ordering={c.ordering_mode}"
        + (
            f" retry={ms_text(c.retry_initial_delay_ms)}x{c.retry_multiplier:g}"
            f"..{ms_text(c.retry_max_delay_ms)} jitter={c.retry_jitter:g}"
            if c.retry_initial_delay_ms > 0
            else ""
        )
        + (f" generation={info.generation}" if info.generation else "")
    )
    return 0


def _ensure_queue(ctx: Context, cfg: QueueConfig) -> int:
    """``create-queue --if-absent``: EnsureQueue, saying what it found."""
    g = ctx.args
    found = ctx.client.ensure_queue(g.name, cfg, g.strict)
    if ctx.out.json:
        ctx.out.wire(wire.ENSURE_QUEUE, wire.EnsureQueueResponse.of(found))
        return 0
    info, c = found.queue, found.queue.config
    if found.created:
        ctx.out.line(
            f"queue {info.name} created: lock={ms_text(c.lock_duration_ms)} "
            f"max-delivery={c.max_delivery_count} ordering={c.ordering_mode}"
        )
    elif found.differs:
        ctx.out.line(
            f"queue {info.name} exists; left as it is (it differs in "
            f"{', '.join(found.differs)}; create-queue without --if-absent reconfigures it)"
        )
    else:
        ctx.out.line(f"queue {info.name} exists with this config; left as it is")
    return 0


def delete_queue(ctx: Context) -> int:
    g = ctx.args
    ctx.client.delete_queue(g.name, g.generation)
    ctx.out.answer(wire.DELETE_QUEUE, wire.DeleteQueueResponse(True), f"deleted queue {g.name}")
    return 0


def subscribe(ctx: Context) -> int:
    g = ctx.args
    ctx.client.subscribe(g.topic, g.name, g.expr)
    shown = f" where {g.expr}" if g.expr else " (all messages)"
    text = f"subscribed {g.name} to topic {g.topic}{shown}"
    ctx.out.answer(wire.SUBSCRIBE, wire.EmptyResponse(), text)
    return 0


def unsubscribe(ctx: Context) -> int:
    g = ctx.args
    ctx.client.unsubscribe(g.topic, g.name)
    text = f"unsubscribed {g.name} from topic {g.topic}"
    ctx.out.answer(wire.UNSUBSCRIBE, wire.EmptyResponse(), text)
    return 0


def list_queues(ctx: Context) -> int:
    queues = list(ctx.client.list_queues())

    def rows() -> Iterator[tuple[object, ...]]:
        # A subscription's backing queue carries the subscription's name; show its topic.
        topics = {s.name: s.topic for s in ctx.client.list_subscriptions()}
        for q in queues:
            c = q.config
            yield (q.name, c.kind, topics.get(q.name, "-"), c.ordering_mode or "standard",
                   ms_text(c.lock_duration_ms), c.max_delivery_count, ms_text(c.default_ttl_ms),
                   ms_text(c.dedup_window_ms), q.generation or "-")  # fmt: skip

    ctx.out.listing(
        wire.LIST_QUEUES,
        wire.ListQueuesResponse.of(queues),
        queues,
        "no queues",
        ("NAME", "KIND", "TOPIC", "ORDERING", "LOCK", "MAX-DELIVERY", "TTL", "DEDUP", "GENERATION"),
        rows(),
    )
    return 0


def list_subscriptions(ctx: Context) -> int:
    subs = list(ctx.client.list_subscriptions())
    ctx.out.listing(
        wire.LIST_SUBSCRIPTIONS,
        wire.ListSubscriptionsResponse.of(subs),
        subs,
        "no subscriptions",
        ("TOPIC", "NAME", "FILTER"),
        ((s.topic, s.name, s.expr or "*") for s in subs),
    )
    return 0


def test_filter(ctx: Context) -> int:
    g = ctx.args
    body = a.read_body(g.body, g.file, required=False)
    props = dict(g.prop)
    sample = None
    if body is not None or g.subject or g.group or props:
        sample = OutMessage(body=body or b"", subject=g.subject, group_id=g.group, properties=props)
    result: FilterTestResult = ctx.client.test_filter(g.expr, sample)
    if ctx.out.json:
        ctx.out.wire(wire.TEST_FILTER, wire.TestFilterResponse.of(result))
    elif not result.valid:
        pass
    elif not result.ran:
        ctx.out.line("valid")
    else:
        ctx.out.line("valid; sample matches" if result.matched else "valid; sample does NOT match")
    if not result.valid:  # the engine's text already says "filter: ..."
        raise Failure(f"invalid filter: {result.error.removeprefix('filter: ')}")
    if result.ran and result.error:
        ctx.out.warn(f"evaluation failed: {result.error}")
    return 0

"""One function per RPC: decoded request → engine call on the writer thread → response value.

Handlers hold no SQL and no encoding: the engine validates and decides, ``mqlite.wire``
encodes (each response Struct's ``of`` builds it from the engine's values). Each records
what the access log may show (queue, item count), never a body.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from starlette.types import Receive

from mqlite import errors
from mqlite import wire as w
from mqlite.config import Settings
from mqlite.engine import Engine, scopes
from mqlite.engine.audit import Actor
from mqlite.engine.dlq import PACE_INTERVAL_MS, Walk, chunk_plan
from mqlite.server.auth import in_scope
from mqlite.server.runtime import Runtime
from mqlite.types import ReceiveMode
from mqlite.version import VERSION as __version__


@dataclass(slots=True)
class Context:
    runtime: Runtime
    log: dict[str, Any]
    receive: Receive
    started_ms: int
    settings: Settings
    access: str = ""  # the caller's principal access (manage, key, monitor, anonymous)
    broker: Any = None  # the BrokerApp (Observe adds its HTTP measurements)
    scope: tuple[str, ...] = ()  # a scoped key's queue patterns (lists are filtered to them)
    share: Any = None  # the caller's shares.Share (None: no share, an admin token)
    actor: Actor | None = None  # who asks, for the audit trail (audited routes only)

    @property
    def engine(self) -> Engine:
        return self.runtime.engine

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self.runtime.call(fn, *args, **kwargs)


Handler = Callable[[Context, Any], Awaitable[Any]]
HANDLERS: dict[str, Handler] = {}


def rpc(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = fn
        return fn

    return register


# -- QueueService -------------------------------------------------------------------------


@rpc("QueueService/Send", "QueueService/Schedule")
async def send(ctx: Context, req: w.SendRequest) -> Any:
    ctx.log.update(queue=req.queue, n=len(req.messages))
    if req.scheduled_enqueue_time_ms < 0:
        raise errors.InvalidArgument("scheduled_enqueue_time_ms must not be negative")
    if req.ttl_ms < 0:
        raise errors.InvalidArgument("ttl_ms must not be negative")
    ttl = req.ttl_ms or None
    engine = ctx.engine
    # A publish through filters routes on a worker thread: the filters' CPU never holds
    # the event loop or the writer (the engine commits on the writer afterwards).
    run = asyncio.to_thread if engine.has_filters(req.queue) else ctx.call
    if req.scheduled_enqueue_time_ms > 0:
        seqs = await run(
            engine.schedule, req.queue, req.out_messages(), req.scheduled_enqueue_time_ms, ttl
        )
    else:
        seqs = await run(engine.send, req.queue, req.out_messages(), ttl)
    return w.SendResponse(tuple(seqs))


@rpc("QueueService/Receive")
async def receive(ctx: Context, req: w.ReceiveRequest) -> Any:
    ctx.log["queue"] = req.queue
    if req.receive_mode not in (0, 1):
        raise errors.InvalidArgument("receive_mode must be 0 (peek-lock) or 1 (receive-and-delete)")
    mode = ReceiveMode.RECEIVE_AND_DELETE if req.receive_mode else ReceiveMode.PEEK_LOCK
    attempt = req.receive_attempt_id or None
    # Validation reads only the in-memory catalog: no writer-thread hop needed.
    name, n, wait, delete = ctx.engine.receive_args(
        req.queue, req.max_messages, req.wait_time_ms, mode, attempt
    )
    # A long poll counts against its credential's share of parked polls (shares.py).
    parked = wait > 0 and ctx.broker is not None and ctx.broker.shares.park(ctx.share)
    disconnected = asyncio.Event()
    watcher = asyncio.ensure_future(_watch_disconnect(ctx.receive, disconnected)) if wait else None
    try:
        msgs = await ctx.runtime.receive(
            name, n, wait, delete=delete, attempt_id=attempt, disconnected=disconnected
        )
    finally:
        if watcher is not None:
            watcher.cancel()
        if parked:
            ctx.broker.shares.unpark(ctx.share)
    ctx.log["n"] = len(msgs)
    if not msgs:
        ctx.log["empty_receive"] = True
    return w.ReceiveResponse.of(msgs)


async def _watch_disconnect(receive: Receive, disconnected: asyncio.Event) -> None:
    """After the body is read, the next ASGI message is the client going away."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            disconnected.set()
            return


def _plain_settle(verb: str) -> Handler:
    """Complete, Defer and Renew take exactly (queue, seq_number, lock_token)."""

    async def handler(ctx: Context, req: w.SettleRequest) -> Any:
        ctx.log.update(queue=req.queue, seq=req.seq_number)
        await ctx.call(getattr(ctx.engine, verb), req.queue, req.seq_number, req.lock_token)
        return w.SettleResponse()

    return handler


for _verb in ("Complete", "Defer", "Renew"):
    rpc(f"QueueService/{_verb}")(_plain_settle(_verb.lower()))


@rpc("QueueService/Abandon")
async def abandon(ctx: Context, req: w.SettleRequest) -> Any:
    ctx.log.update(queue=req.queue, seq=req.seq_number)
    await ctx.call(
        ctx.engine.abandon, req.queue, req.seq_number, req.lock_token, req.delay_ms, req.error
    )
    return w.SettleResponse()


@rpc("QueueService/Reject")
async def reject(ctx: Context, req: w.SettleRequest) -> Any:
    ctx.log.update(queue=req.queue, seq=req.seq_number)
    await ctx.call(
        ctx.engine.reject,
        req.queue,
        req.seq_number,
        req.lock_token,
        req.dead_letter_reason,
        req.dead_letter_description,
    )
    return w.SettleResponse()


@rpc("QueueService/CompleteBatch")
async def complete_batch(ctx: Context, req: w.CompleteBatchRequest) -> Any:
    ctx.log.update(queue=req.queue, n=len(req.messages))
    pairs = [(m.seq_number, m.lock_token) for m in req.messages]
    return w.CompleteBatchResponse.of(await ctx.call(ctx.engine.complete_batch, req.queue, pairs))


@rpc("QueueService/RenewBatch")
async def renew_batch(ctx: Context, req: w.RenewBatchRequest) -> Any:
    ctx.log.update(queue=req.queue, n=len(req.messages))
    pairs = [(m.seq_number, m.lock_token) for m in req.messages]
    return w.RenewBatchResponse.of(await ctx.call(ctx.engine.renew_batch, req.queue, pairs))


@rpc("QueueService/ReceiveDeferred")
async def receive_deferred(ctx: Context, req: w.ReceiveDeferredRequest) -> Any:
    ctx.log.update(queue=req.queue, n=len(req.seq_numbers))
    msgs = await ctx.call(ctx.engine.receive_deferred, req.queue, list(req.seq_numbers))
    return w.ReceiveResponse.of(msgs)


@rpc("QueueService/Cancel")
async def cancel(ctx: Context, req: w.CancelRequest) -> Any:
    ctx.log.update(queue=req.queue, seq=req.seq_number)
    await ctx.call(ctx.engine.cancel, req.queue, req.seq_number)
    return w.SettleResponse()


@rpc("QueueService/Peek")
async def peek(ctx: Context, req: w.PeekRequest) -> Any:
    ctx.log["queue"] = req.queue
    msgs = await ctx.call(ctx.engine.peek, req.queue, req.state or None, req.from_seq, req.max)
    ctx.log["n"] = len(msgs)
    return w.PeekResponse.of(msgs)


@rpc("QueueService/Stats")
async def stats(ctx: Context, req: w.MetricsRequest) -> Any:
    ctx.log["queue"] = req.queue
    return w.MetricsResponse.of(await ctx.call(ctx.engine.stats, req.queue))


# -- AdminService -------------------------------------------------------------------------


@rpc("AdminService/CreateQueue")
async def create_queue(ctx: Context, req: w.CreateQueueRequest) -> Any:
    ctx.log["queue"] = req.name
    await ctx.call(ctx.engine.create_queue, req.name, req.queue_config, actor=ctx.actor)
    return w.EmptyResponse()


@rpc("AdminService/EnsureQueue")
async def ensure_queue(ctx: Context, req: w.EnsureQueueRequest) -> Any:
    ctx.log["queue"] = req.name
    found = await ctx.call(
        ctx.engine.ensure_queue, req.name, req.queue_config, req.strict, actor=ctx.actor
    )
    return w.EnsureQueueResponse.of(found)


@rpc("AdminService/DeleteQueue")
async def delete_queue(ctx: Context, req: w.DeleteQueueRequest) -> Any:
    ctx.log["queue"] = req.name
    await ctx.call(ctx.engine.delete_queue, req.name, req.generation, actor=ctx.actor)
    return w.DeleteQueueResponse()


@rpc("AdminService/Subscribe")
async def subscribe(ctx: Context, req: w.SubscribeRequest) -> Any:
    ctx.log.update(topic=req.topic, sub=req.name)
    await ctx.call(ctx.engine.subscribe, req.topic, req.name, req.expr, actor=ctx.actor)
    return w.EmptyResponse()


@rpc("AdminService/Unsubscribe")
async def unsubscribe(ctx: Context, req: w.UnsubscribeRequest) -> Any:
    ctx.log.update(topic=req.topic, sub=req.name)
    await ctx.call(ctx.engine.unsubscribe, req.topic, req.name, actor=ctx.actor)
    return w.EmptyResponse()


@rpc("AdminService/ListQueues")
async def list_queues(ctx: Context, _: w.EmptyRequest) -> Any:
    found = await ctx.call(ctx.engine.list_queues)
    if ctx.scope:  # a scoped key sees only its own queues (auth.in_scope)
        found = [q for q in found if in_scope(ctx.scope, q.name, ctx.engine.topic_of)]
    return w.ListQueuesResponse.of(found)


@rpc("AdminService/ListSubscriptions")
async def list_subscriptions(ctx: Context, _: w.EmptyRequest) -> Any:
    subs = await ctx.call(ctx.engine.list_subscriptions)
    if ctx.scope:  # through the topic's name or the subscription's own
        subs = [
            s
            for s in subs
            if scopes.matches(ctx.scope, s.topic) or scopes.matches(ctx.scope, s.name)
        ]
    return w.ListSubscriptionsResponse.of(subs)


@rpc("AdminService/TestFilter")
async def test_filter(ctx: Context, req: w.TestFilterRequest) -> Any:
    # Pure CPU, no storage: a worker thread, so neither the loop nor the writer waits on it.
    result = await asyncio.to_thread(
        ctx.engine.test_filter,
        req.expr,
        req.message,
        req.enqueued_at_ms or None,
        req.visible_at_ms or None,
    )
    return w.TestFilterResponse.of(result)


@rpc("AdminService/Redrive")
async def redrive(ctx: Context, req: w.RedriveRequest) -> Any:
    """Walks the engine's chunk plan (``dlq.chunk_plan``), each chunk one transaction on
    the writer (other work runs between them); a paced redrive waits here, on the event
    loop, never holding the writer, and stops when its client goes away (nobody would
    learn what it moved: 499)."""
    ctx.log["queue"] = req.queue
    target = req.target or None
    for name, value in (
        ("max", req.max),
        ("older_than_ms", req.older_than_ms),
        ("rate_per_sec", req.rate_per_sec),
    ):
        if value < 0:
            raise errors.InvalidArgument(f"{name} must not be negative")
    moved = 0
    walk: Walk | None = None
    gone = asyncio.Event()
    watcher = asyncio.ensure_future(_watch_disconnect(ctx.receive, gone))
    try:
        for chunk, pause in chunk_plan(req.max, req.rate_per_sec):
            n, walk = await ctx.call(
                ctx.engine.redrive_chunk,
                req.queue,
                target,
                chunk,
                req.older_than_ms,
                walk,
                req.seq_numbers,
                actor=ctx.actor,
            )
            moved += n
            ctx.log["n"] = moved
            if n < chunk or ctx.runtime.draining:
                break
            if req.max > 0 and moved >= req.max:
                break
            if pause:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(gone.wait(), PACE_INTERVAL_MS / 1000)
            if gone.is_set():
                raise errors.Canceled(f"the client went away; the redrive stopped after {moved}")
    finally:
        watcher.cancel()
    return w.RedriveResponse(moved)


@rpc("AdminService/Purge")
async def purge(ctx: Context, req: w.PurgeRequest) -> Any:
    """Chunk by chunk, like Redrive (unpaced): other work runs between them."""
    ctx.log["queue"] = req.queue
    for name, value in (("max", req.max), ("older_than_ms", req.older_than_ms)):
        if value < 0:
            raise errors.InvalidArgument(f"{name} must not be negative")
    purged = 0
    walk: Walk | None = None
    for chunk, _ in chunk_plan(req.max, 0):
        n, walk = await ctx.call(
            ctx.engine.purge_chunk,
            req.queue,
            chunk,
            req.older_than_ms,
            walk,
            req.seq_numbers,
            actor=ctx.actor,
        )
        purged += n
        ctx.log["n"] = purged
        if n < chunk or ctx.runtime.draining:
            break
    return w.PurgeResponse(purged)


@rpc("AdminService/Status")
async def status(ctx: Context, _: w.EmptyRequest) -> Any:
    snapshot = await ctx.call(ctx.engine.status)
    return w.StatusResponse(
        version=__version__,
        uptime_ms=max(ctx.engine.now_ms() - ctx.started_ms, 0),
        auth=ctx.settings.auth,
        **snapshot,
    )


@rpc("AdminService/Observe")
async def observe(ctx: Context, _: w.EmptyRequest) -> Any:
    # One conversion per round of concurrent callers (server/observations.py), in a
    # thread: a zero-filled observation of many queues is too big to convert on the loop.
    shared = await ctx.broker.observations.round()
    response = await shared.converted(w.ObserveResponse.of)
    return msgspec.structs.replace(response, access=ctx.access)


# -- AuthService --------------------------------------------------------------------------


@rpc("AuthService/CreateKey")
async def create_key(ctx: Context, req: w.CreateKeyRequest) -> Any:
    key, token = await ctx.call(
        ctx.engine.create_key,
        req.id,
        req.name,
        list(req.permissions),
        req.expires_at_ms,
        list(req.queues),
        req.rate_limit_per_s,
        req.burst,
        actor=ctx.actor,
    )
    return w.CreateKeyResponse.of(key, token)


@rpc("AuthService/ListKeys")
async def list_keys(ctx: Context, req: w.ListKeysRequest) -> Any:
    keys, next_after = await ctx.call(
        ctx.engine.list_keys, req.after_id, req.limit, req.sort or "id_asc"
    )
    return w.ListKeysResponse.of(keys, next_after)


@rpc("AuthService/RevokeKey")
async def revoke_key(ctx: Context, req: w.RevokeKeyRequest) -> Any:
    await ctx.call(ctx.engine.revoke_key, req.id, actor=ctx.actor)
    return w.SettleResponse()


# -- AdminService: cron schedules (docs/cron.md) ------------------------------------------


@rpc("AdminService/CreateSchedule")
async def create_schedule(ctx: Context, req: w.CreateScheduleRequest) -> Any:
    ctx.log.update(schedule=req.name, queue=req.queue)
    schedule = await ctx.call(
        ctx.engine.create_schedule,
        req.name,
        req.cron,
        req.queue,
        req.out_message(),
        req.timezone,
        req.catch_up,
        req.paused,
        actor=ctx.actor,
    )
    return w.ScheduleResponse.of(schedule)


@rpc("AdminService/DeleteSchedule")
async def delete_schedule(ctx: Context, req: w.DeleteScheduleRequest) -> Any:
    ctx.log["schedule"] = req.name
    # A scoped manage key: the schedule's target queue must be in its scope, judged in the
    # deleting transaction (the request names no queue for authorize_scope to check).
    allow = None
    if ctx.scope:
        scope, topic_of = ctx.scope, ctx.engine.topic_of
        allow = lambda queue: in_scope(scope, queue, topic_of)  # noqa: E731
    deleted = await ctx.call(ctx.engine.delete_schedule, req.name, actor=ctx.actor, allow=allow)
    return w.DeleteScheduleResponse(deleted)


@rpc("AdminService/ListSchedules")
async def list_schedules(ctx: Context, _: w.EmptyRequest) -> Any:
    return w.ListSchedulesResponse.of(await ctx.call(ctx.engine.list_schedules))


# -- AdminService: the audit trail (docs/operations.md "Audit trail") ---------------------


@rpc("AdminService/ListAudit")
async def list_audit(ctx: Context, req: w.ListAuditRequest) -> Any:
    entries = await asyncio.to_thread(
        ctx.engine.list_audit, req.after_id, req.limit, req.queue, req.since_ms
    )
    ctx.log["n"] = len(entries)
    return w.ListAuditResponse.of(entries)

"""QueueService handlers: send, receive, settle, browse (``handlers.py`` says what a
handler may do).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from mqlite import errors
from mqlite import wire as w
from mqlite.server.broker import Broker
from mqlite.server.context import Context, Handler, watch_disconnect
from mqlite.types import ReceiveMode

# -- QueueService -------------------------------------------------------------------------


async def send(ctx: Context, req: w.SendRequest) -> w.SendResponse:
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


async def receive(ctx: Context, req: w.ReceiveRequest) -> w.ReceiveResponse:
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
    watcher = asyncio.ensure_future(watch_disconnect(ctx.receive, disconnected)) if wait else None
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


PlainSettle = Callable[[Broker], Callable[[str, int, str], object]]


def _plain_settle(verb: PlainSettle) -> Handler[w.SettleRequest, w.SettleResponse]:
    """Complete, Defer and Renew take exactly (queue, seq_number, lock_token)."""

    async def handler(ctx: Context, req: w.SettleRequest) -> w.SettleResponse:
        ctx.log.update(queue=req.queue, seq=req.seq_number)
        await ctx.call(verb(ctx.engine), req.queue, req.seq_number, req.lock_token)
        return w.SettleResponse()

    return handler


complete = _plain_settle(lambda engine: engine.complete)
defer = _plain_settle(lambda engine: engine.defer)
renew = _plain_settle(lambda engine: engine.renew)


async def abandon(ctx: Context, req: w.SettleRequest) -> w.SettleResponse:
    ctx.log.update(queue=req.queue, seq=req.seq_number)
    await ctx.call(
        ctx.engine.abandon, req.queue, req.seq_number, req.lock_token, req.delay_ms, req.error
    )
    return w.SettleResponse()


async def reject(ctx: Context, req: w.SettleRequest) -> w.SettleResponse:
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


async def complete_batch(ctx: Context, req: w.CompleteBatchRequest) -> w.CompleteBatchResponse:
    ctx.log.update(queue=req.queue, n=len(req.messages))
    pairs = [(m.seq_number, m.lock_token) for m in req.messages]
    return w.CompleteBatchResponse.of(await ctx.call(ctx.engine.complete_batch, req.queue, pairs))


async def renew_batch(ctx: Context, req: w.RenewBatchRequest) -> w.RenewBatchResponse:
    ctx.log.update(queue=req.queue, n=len(req.messages))
    pairs = [(m.seq_number, m.lock_token) for m in req.messages]
    return w.RenewBatchResponse.of(await ctx.call(ctx.engine.renew_batch, req.queue, pairs))


async def receive_deferred(ctx: Context, req: w.ReceiveDeferredRequest) -> w.ReceiveResponse:
    ctx.log.update(queue=req.queue, n=len(req.seq_numbers))
    msgs = await ctx.call(ctx.engine.receive_deferred, req.queue, list(req.seq_numbers))
    return w.ReceiveResponse.of(msgs)


async def cancel(ctx: Context, req: w.CancelRequest) -> w.SettleResponse:
    ctx.log.update(queue=req.queue, seq=req.seq_number)
    await ctx.call(ctx.engine.cancel, req.queue, req.seq_number)
    return w.SettleResponse()


async def peek(ctx: Context, req: w.PeekRequest) -> w.PeekResponse:
    ctx.log["queue"] = req.queue
    msgs = await ctx.call(ctx.engine.peek, req.queue, req.state or None, req.from_seq, req.max)
    ctx.log["n"] = len(msgs)
    return w.PeekResponse.of(msgs)


async def stats(ctx: Context, req: w.MetricsRequest) -> w.MetricsResponse:
    ctx.log["queue"] = req.queue
    return w.MetricsResponse.of(await ctx.call(ctx.engine.stats, req.queue))

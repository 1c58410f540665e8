"""AdminService's dead-letter walks, Redrive and Purge: long operations over a queue's
dead letters, served chunk by chunk (``dlq.chunk_plan``), each chunk one transaction on
the writer so that other work runs between them (``handlers.py`` says what a handler may
do).
"""

from __future__ import annotations

import asyncio

from mqlite import errors
from mqlite import wire as w
from mqlite.engine.dlq import PACE_INTERVAL_MS, Walk, chunk_plan
from mqlite.event_wait import wait_event
from mqlite.server.context import Context, watch_disconnect


async def redrive(ctx: Context, req: w.RedriveRequest) -> w.RedriveResponse:
    """Walks the engine's chunk plan (``dlq.chunk_plan``), each chunk one transaction on
    the writer (other work runs between them); a paced redrive waits here, on the event
    loop, never holding the writer, and stops when its client goes away (nobody would
    learn what it moved: 499)."""
    ctx.log["queue"] = req.queue
    target = req.target or None
    _non_negative(max=req.max, older_than_ms=req.older_than_ms, rate_per_sec=req.rate_per_sec)
    moved = 0
    walk: Walk | None = None
    gone = asyncio.Event()
    watcher = asyncio.ensure_future(watch_disconnect(ctx.receive, gone))
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
                await wait_event(gone, PACE_INTERVAL_MS / 1000)
            if gone.is_set():
                raise errors.Canceled(f"the client went away; the redrive stopped after {moved}")
    finally:
        watcher.cancel()
    return w.RedriveResponse(moved)


async def purge(ctx: Context, req: w.PurgeRequest) -> w.PurgeResponse:
    """Chunk by chunk, like Redrive (unpaced): other work runs between them."""
    ctx.log["queue"] = req.queue
    _non_negative(max=req.max, older_than_ms=req.older_than_ms)
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


def _non_negative(**fields: int) -> None:
    """A walk's bounds: 0 means none, a negative one is a 400 naming the field."""
    for name, value in fields.items():
        if value < 0:
            raise errors.InvalidArgument(f"{name} must not be negative")

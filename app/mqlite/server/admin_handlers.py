"""AdminService and AuthService handlers: the catalog, status, observation, access keys,
cron schedules, the audit trail, push targets -- one engine call each (``handlers.py``
says what a handler may do). The dead-letter walks are ``dlq_handlers.py``'s.
"""

from __future__ import annotations

import asyncio

import msgspec

from mqlite import wire as w
from mqlite.engine import scopes
from mqlite.server.auth import in_scope
from mqlite.server.context import Context
from mqlite.version import VERSION as __version__

# -- AdminService -------------------------------------------------------------------------


async def create_queue(ctx: Context, req: w.CreateQueueRequest) -> w.EmptyResponse:
    ctx.log["queue"] = req.name
    await ctx.call(ctx.engine.create_queue, req.name, req.queue_config, actor=ctx.actor)
    return w.EmptyResponse()


async def ensure_queue(ctx: Context, req: w.EnsureQueueRequest) -> w.EnsureQueueResponse:
    ctx.log["queue"] = req.name
    found = await ctx.call(
        ctx.engine.ensure_queue, req.name, req.queue_config, req.strict, actor=ctx.actor
    )
    return w.EnsureQueueResponse.of(found)


async def delete_queue(ctx: Context, req: w.DeleteQueueRequest) -> w.DeleteQueueResponse:
    ctx.log["queue"] = req.name
    await ctx.call(ctx.engine.delete_queue, req.name, req.generation, actor=ctx.actor)
    return w.DeleteQueueResponse()


async def subscribe(ctx: Context, req: w.SubscribeRequest) -> w.EmptyResponse:
    ctx.log.update(topic=req.topic, sub=req.name)
    await ctx.call(ctx.engine.subscribe, req.topic, req.name, req.expr, actor=ctx.actor)
    return w.EmptyResponse()


async def unsubscribe(ctx: Context, req: w.UnsubscribeRequest) -> w.EmptyResponse:
    ctx.log.update(topic=req.topic, sub=req.name)
    await ctx.call(ctx.engine.unsubscribe, req.topic, req.name, actor=ctx.actor)
    return w.EmptyResponse()


async def list_queues(ctx: Context, _: w.EmptyRequest) -> w.ListQueuesResponse:
    found = await ctx.call(ctx.engine.list_queues)
    if ctx.scope:  # a scoped key sees only its own queues (auth.in_scope)
        found = [q for q in found if in_scope(ctx.scope, q.name, ctx.engine.topic_of)]
    return w.ListQueuesResponse.of(found)


async def list_subscriptions(ctx: Context, _: w.EmptyRequest) -> w.ListSubscriptionsResponse:
    subs = await ctx.call(ctx.engine.list_subscriptions)
    if ctx.scope:  # through the topic's name or the subscription's own
        subs = [
            s
            for s in subs
            if scopes.matches(ctx.scope, s.topic) or scopes.matches(ctx.scope, s.name)
        ]
    return w.ListSubscriptionsResponse.of(subs)


async def test_filter(ctx: Context, req: w.TestFilterRequest) -> w.TestFilterResponse:
    # Pure CPU, no storage: a worker thread, so neither the loop nor the writer waits on it.
    result = await asyncio.to_thread(
        ctx.engine.test_filter,
        req.expr,
        req.message,
        req.enqueued_at_ms or None,
        req.visible_at_ms or None,
    )
    return w.TestFilterResponse.of(result)


async def status(ctx: Context, _: w.EmptyRequest) -> w.StatusResponse:
    snapshot = await ctx.call(ctx.engine.status)
    return w.StatusResponse(
        version=__version__,
        uptime_ms=max(ctx.engine.now_ms() - ctx.started_ms, 0),
        auth=ctx.settings.auth,
        **snapshot,
    )


async def observe(ctx: Context, _: w.EmptyRequest) -> w.ObserveResponse:
    # One conversion per round of concurrent callers (server/observations.py), in a
    # thread: a zero-filled observation of many queues is too big to convert on the loop.
    shared = await ctx.broker.observations.round()
    response: w.ObserveResponse = await shared.converted(w.ObserveResponse.of)
    return msgspec.structs.replace(response, access=ctx.access)


# -- AuthService --------------------------------------------------------------------------


async def create_key(ctx: Context, req: w.CreateKeyRequest) -> w.CreateKeyResponse:
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


async def list_keys(ctx: Context, req: w.ListKeysRequest) -> w.ListKeysResponse:
    keys, next_after = await ctx.call(
        ctx.engine.list_keys, req.after_id, req.limit, req.sort or "id_asc"
    )
    return w.ListKeysResponse.of(keys, next_after)


async def revoke_key(ctx: Context, req: w.RevokeKeyRequest) -> w.SettleResponse:
    await ctx.call(ctx.engine.revoke_key, req.id, actor=ctx.actor)
    return w.SettleResponse()


# -- AdminService: cron schedules (docs/cron.md) ------------------------------------------


async def create_schedule(ctx: Context, req: w.CreateScheduleRequest) -> w.ScheduleResponse:
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


async def delete_schedule(ctx: Context, req: w.DeleteScheduleRequest) -> w.DeleteScheduleResponse:
    ctx.log["schedule"] = req.name
    # A scoped manage key: the schedule's target queue must be in its scope, judged in the
    # deleting transaction (the request names no queue for authorize_scope to check).
    allow = None
    if ctx.scope:
        scope, topic_of = ctx.scope, ctx.engine.topic_of
        allow = lambda queue: in_scope(scope, queue, topic_of)  # noqa: E731
    deleted = await ctx.call(ctx.engine.delete_schedule, req.name, actor=ctx.actor, allow=allow)
    return w.DeleteScheduleResponse(deleted)


async def list_schedules(ctx: Context, _: w.EmptyRequest) -> w.ListSchedulesResponse:
    return w.ListSchedulesResponse.of(await ctx.call(ctx.engine.list_schedules))


# -- AdminService: the audit trail (docs/operations.md "Audit trail") ---------------------


async def list_audit(ctx: Context, req: w.ListAuditRequest) -> w.ListAuditResponse:
    entries = await asyncio.to_thread(
        ctx.engine.list_audit, req.after_id, req.limit, req.queue, req.since_ms
    )
    ctx.log["n"] = len(entries)
    return w.ListAuditResponse.of(entries)


# -- AdminService: push targets (docs/push.md) --------------------------------------------


async def create_push(ctx: Context, req: w.CreatePushRequest) -> w.PushResponse:
    ctx.log["queue"] = req.queue  # never the secret, nor the url (it may carry a token)
    # On a worker thread, not the writer: the egress check resolves the url's host (DNS
    # can take seconds); only the upsert itself then goes to the writer.
    push = await asyncio.to_thread(
        ctx.engine.create_push,
        req.queue,
        req.url,
        req.secret,
        req.max_in_flight,
        req.timeout_ms,
        req.paused,
        actor=ctx.actor,
    )
    return w.PushResponse.of(push)


async def delete_push(ctx: Context, req: w.DeletePushRequest) -> w.DeletePushResponse:
    ctx.log["queue"] = req.queue
    deleted = await ctx.call(ctx.engine.delete_push, req.queue, actor=ctx.actor)
    return w.DeletePushResponse(deleted)


async def list_pushes(ctx: Context, _: w.EmptyRequest) -> w.ListPushesResponse:
    return w.ListPushesResponse.of(await ctx.call(ctx.engine.list_pushes))

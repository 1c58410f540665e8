"""The handler table: each route of ``mqlite.wire`` bound to the one function that serves it.

A handler turns a decoded request into an engine call on the writer thread and a response
value. Handlers hold no SQL and no encoding: the engine validates and decides,
``mqlite.wire`` encodes (each response Struct's ``of`` builds it from the engine's
values). Each records what the access log may show (queue, item count), never a body.
The engine is reached only as a ``Broker`` (``broker.py``), and through ``ctx.call``,
which mypy checks against the verb's own signature. What a route needs of its caller
(the permission, authentication on) is on the route, never decided here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from mqlite import wire as w
from mqlite.server import admin_handlers as a
from mqlite.server import dlq_handlers as d
from mqlite.server import queue_handlers as q
from mqlite.server.context import Binding, Context, Handler, bind

# In the discovery order of ``wire.ROUTES``; mypy checks each pair's Req/Resp agree.
BINDINGS: tuple[Binding[Any, Any], ...] = (
    bind(w.SEND, q.send),
    bind(w.SCHEDULE, q.send),
    bind(w.RECEIVE, q.receive),
    bind(w.RECEIVE_DEFERRED, q.receive_deferred),
    bind(w.COMPLETE, q.complete),
    bind(w.ABANDON, q.abandon),
    bind(w.REJECT, q.reject),
    bind(w.DEFER, q.defer),
    bind(w.RENEW, q.renew),
    bind(w.CANCEL, q.cancel),
    bind(w.COMPLETE_BATCH, q.complete_batch),
    bind(w.RENEW_BATCH, q.renew_batch),
    bind(w.PEEK, q.peek),
    bind(w.STATS, q.stats),
    bind(w.CREATE_QUEUE, a.create_queue),
    bind(w.ENSURE_QUEUE, a.ensure_queue),
    bind(w.DELETE_QUEUE, a.delete_queue),
    bind(w.SUBSCRIBE, a.subscribe),
    bind(w.UNSUBSCRIBE, a.unsubscribe),
    bind(w.LIST_QUEUES, a.list_queues),
    bind(w.LIST_SUBSCRIPTIONS, a.list_subscriptions),
    bind(w.TEST_FILTER, a.test_filter),
    bind(w.REDRIVE, d.redrive),
    bind(w.PURGE, d.purge),
    bind(w.STATUS, a.status),
    bind(w.OBSERVE, a.observe),
    bind(w.CREATE_KEY, a.create_key),
    bind(w.LIST_KEYS, a.list_keys),
    bind(w.REVOKE_KEY, a.revoke_key),
    bind(w.CREATE_SCHEDULE, a.create_schedule),
    bind(w.DELETE_SCHEDULE, a.delete_schedule),
    bind(w.LIST_SCHEDULES, a.list_schedules),
    bind(w.LIST_AUDIT, a.list_audit),
    bind(w.CREATE_PUSH, a.create_push),
    bind(w.DELETE_PUSH, a.delete_push),
    bind(w.LIST_PUSHES, a.list_pushes),
)

BY_ROUTE: Mapping[str, Binding[Any, Any]] = MappingProxyType({b.route.name: b for b in BINDINGS})
HANDLERS: Mapping[str, Handler[Any, Any]] = MappingProxyType(
    {name: b.handler for name, b in BY_ROUTE.items()}
)

__all__ = ["BINDINGS", "BY_ROUTE", "HANDLERS", "Binding", "Context", "Handler"]

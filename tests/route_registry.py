"""The route lists tests iterate, derived from the wire table (``mqlite.wire.ROUTES``).

A new verb is declared once, in ``app/mqlite/wire/``; every test that walks "all routes"
or "the routes a permission allows" picks it up from here without an edit
(docs/contributing.md). The one hand-kept list is the order the spec pins: the original
broker's 22 routes in registration order (original-behaviour §8 "Routes"), which the
discovery card and the route table must keep relative to each other.
"""

from __future__ import annotations

from mqlite import wire

ORIGINAL_22 = [
    "QueueService/Send",
    "QueueService/Receive",
    "QueueService/Complete",
    "QueueService/CompleteBatch",
    "QueueService/RenewBatch",
    "QueueService/Abandon",
    "QueueService/Reject",
    "QueueService/Defer",
    "QueueService/ReceiveDeferred",
    "QueueService/Renew",
    "QueueService/Schedule",
    "QueueService/Cancel",
    "QueueService/Peek",
    "QueueService/Stats",
    "AdminService/CreateQueue",
    "AdminService/Subscribe",
    "AdminService/ListQueues",
    "AdminService/ListSubscriptions",
    "AdminService/TestFilter",
    "AdminService/Redrive",
    "AdminService/Purge",
    "AdminService/Status",
]

ALL = [r.name for r in wire.ROUTES]


def with_permission(permission: str) -> list[str]:
    """The routes a credential needs ``permission`` for, in table order."""
    return [r.name for r in wire.ROUTES if r.permission.value == permission]


def of_service(service: str) -> list[str]:
    return [r.name for r in wire.ROUTES if r.service == service]

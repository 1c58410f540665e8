"""The call table: every remote verb declared ONCE (name, signature with defaults, route,
request building, retry class, result mapping). Everything else is generated from it by
``scripts/gen_sdk.py``: ``HttpClient``'s and ``AsyncClient``'s methods, the ``Client``
protocol and the embedded facade's forwarders (``make lint`` fails if one is stale).

Each verb returns the same value the embedded client returns. Argument checks here are
only the ones the wire cannot express (an empty ``attempt_id`` means "absent" on the wire
but is an error in-process; a ``str`` body would travel as base64 text); everything else
is the broker's.

Retry classes (``RetryPolicy`` applies them):

- ``SAFE``: replaying the exact request cannot change the outcome: reads, a Receive with
  an attempt id (the broker replays the same batch), settlement verbs (an exact-request
  receipt replays a committed settlement), renewals, idempotent upserts, key revocation.
- ``UNSAFE``: retried only when the connection could not be opened (nothing was sent):
  Send/Schedule (a resend would duplicate unless the queue dedups, which the client
  cannot know), Cancel, ReceiveDeferred, DeleteQueue, Unsubscribe, Redrive, Purge and
  CreateKey (never replayed: a lost answer is reconciled by its retained key id).

The table is split by the wire's services, one module each: ``calls_queue``
(QueueService), ``calls_admin`` (AdminService), ``calls_auth`` (AuthService). This module
imports them (registering every verb in ``call.VERBS``) and re-exports each verb under its
name, which is how the generated clients call them (``calls.send_one(...)``).
"""

from __future__ import annotations

from mqlite.sdk.calls_admin import (
    create_queue,
    create_schedule,
    delete_queue,
    delete_schedule,
    ensure_queue,
    find_queue,
    get_queue,
    list_queues,
    list_schedules,
    list_subscriptions,
    observe,
    purge,
    redrive,
    status,
    subscribe,
    test_filter,
    unsubscribe,
)
from mqlite.sdk.calls_auth import (
    create_key,
    list_keys,
    revoke_key,
)
from mqlite.sdk.calls_queue import (
    STAND_INS,
    abandon,
    cancel,
    complete,
    complete_batch,
    defer,
    message_json,
    new_attempt_id,
    peek,
    receive,
    receive_deferred,
    reject,
    renew,
    renew_batch,
    schedule,
    send,
    send_one,
    stats,
)

__all__ = [
    "STAND_INS",
    "abandon",
    "cancel",
    "complete",
    "complete_batch",
    "create_key",
    "create_queue",
    "create_schedule",
    "defer",
    "delete_queue",
    "delete_schedule",
    "ensure_queue",
    "find_queue",
    "get_queue",
    "list_keys",
    "list_queues",
    "list_schedules",
    "list_subscriptions",
    "message_json",
    "new_attempt_id",
    "observe",
    "peek",
    "purge",
    "receive",
    "receive_deferred",
    "redrive",
    "reject",
    "renew",
    "renew_batch",
    "revoke_key",
    "schedule",
    "send",
    "send_one",
    "stats",
    "status",
    "subscribe",
    "test_filter",
    "unsubscribe",
]

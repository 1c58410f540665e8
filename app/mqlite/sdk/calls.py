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
  cannot know), Cancel, ReceiveDeferred, DeleteQueue, Unsubscribe, Redrive, Purge,
  CreateKey (never replayed: a lost answer is reconciled by its retained key id) and
  CreatePush (a replay of a committed create would answer without its generated secret).

The table is split by the wire's services, one module each: ``calls_queue``
(QueueService), ``calls_admin`` (AdminService), ``calls_auth`` (AuthService). This module
imports them all (registering every verb in ``call.VERBS``) and re-exports their public
names, which is how the generated clients call them (``calls.send_one(...)``): a verb
added to a service module is exported here with no further edit.
"""

from __future__ import annotations

from mqlite.sdk.calls_admin import *  # noqa: F403
from mqlite.sdk.calls_auth import *  # noqa: F403
from mqlite.sdk.calls_queue import *  # noqa: F403

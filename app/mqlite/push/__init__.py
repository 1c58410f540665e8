"""Push delivery (docs/push.md): the broker as the consumer of a queue with a push target,
POSTing each message to its webhook. ``dispatcher`` runs the loop, ``attempt`` makes one
POST, ``signing`` builds the Standard Webhooks headers, ``transport`` pins each connection
to an address the egress guard checked. Started with the maintenance loops
(mqlite.scheduling), so it runs in ``serve`` and in an embedded broker with
``background=True``.
"""

from mqlite.push.dispatcher import PushDispatcher

__all__ = ["PushDispatcher"]

"""The Engine facade: one store, one clock, one notifier, and the verb modules.

Every public method validates its input first (a client mistake is an ``MQLiteError``,
never a crash and never a partial write), then runs one transaction on the single writer.
Long-poll waiting happens outside any transaction, parked on the per-queue notifier.
"""

from __future__ import annotations

from mqlite.engine.admin import Admin
from mqlite.engine.keys import AccessKeys
from mqlite.engine.maintenance_ops import Maintenance
from mqlite.engine.messaging import Messaging
from mqlite.engine.observe import Observer
from mqlite.engine.queue_ops import Queues
from mqlite.engine.schedules import Schedules


class Engine(Queues, Messaging, Admin, Maintenance, AccessKeys, Observer, Schedules):
    """The broker core on one SQLite database. Thread-safe; knows nothing of HTTP."""

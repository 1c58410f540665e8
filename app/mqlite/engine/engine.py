"""The Engine facade: one store, one clock, one notifier, and the verb modules.

Every public method validates its input first (a client mistake is an ``MQLiteError``,
never a crash and never a partial write), then runs one transaction on the single writer.
Long-poll waiting happens outside any transaction, parked on the per-queue notifier.
"""

from __future__ import annotations

from mqlite.engine.admin import AdminOps
from mqlite.engine.keys import KeyOps
from mqlite.engine.maintenance_ops import MaintenanceOps
from mqlite.engine.messaging import MessagingOps
from mqlite.engine.observe import ObserveOps
from mqlite.engine.queue_ops import QueueOps
from mqlite.engine.schedules import ScheduleOps


class Engine(QueueOps, MessagingOps, AdminOps, MaintenanceOps, KeyOps, ObserveOps, ScheduleOps):
    """The broker core on one SQLite database. Thread-safe; knows nothing of HTTP."""

"""The broker core: stdlib sqlite3 only; knows nothing of HTTP or APScheduler."""

from mqlite.engine.engine import Engine
from mqlite.engine.maintenance import DLQBounds
from mqlite.engine.store import SCHEMA_VERSION
from mqlite.engine.tx import EngineTx

__all__ = ["SCHEMA_VERSION", "DLQBounds", "Engine", "EngineTx"]

"""The broker core: stdlib sqlite3 only; knows nothing of HTTP or APScheduler.

The names below load on first use (PEP 562), so importing one leaf module such as
``mqlite.engine.store`` (the ``mqlite serve`` master's lock pre-check) does not load the
whole engine into the gunicorn master.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mqlite.engine.disk import DiskLimits
    from mqlite.engine.engine import Engine
    from mqlite.engine.location import Location
    from mqlite.engine.maintenance import DLQBounds
    from mqlite.engine.store import SCHEMA_VERSION
    from mqlite.engine.tx import EngineTx

_LAZY = {
    "DiskLimits": "mqlite.engine.disk",
    "Engine": "mqlite.engine.engine",
    "DLQBounds": "mqlite.engine.maintenance",
    "SCHEMA_VERSION": "mqlite.engine.store",
    "Location": "mqlite.engine.location",
    "EngineTx": "mqlite.engine.tx",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'mqlite.engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


__all__ = ["SCHEMA_VERSION", "DLQBounds", "DiskLimits", "Engine", "EngineTx", "Location"]

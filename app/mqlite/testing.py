"""Test hooks for code that embeds mqlite (docs/embedded.md, "Testing").

With ``open_embedded(..., clock=FakeClock(), background=False)`` nothing moves on its own:
advance the clock, then run what the background loops would have run::

    clock.advance(31_000)
    mqlite.testing.run_maintenance_once(mq)   # reaper, scheduler, TTL, janitors, reclaim, cron

``engine(mq)`` is the engine behind an embedded client, for tests of mqlite itself that
need its internals (the notifier, the store); application tests should not need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqlite.clock import FakeClock

if TYPE_CHECKING:
    from mqlite.engine import Engine
    from mqlite.engine.maintenance_ops import MaintenanceReport
    from mqlite.sdk.embedded import EmbeddedClient

__all__ = ["FakeClock", "engine", "run_maintenance_once"]


def engine(client: EmbeddedClient) -> Engine:
    """The engine behind an embedded client."""
    return client._engine


def run_maintenance_once(client: EmbeddedClient) -> MaintenanceReport:
    """Every maintenance pass once, in the spec's order, at the clock's current time."""
    return client._engine.run_maintenance_once()

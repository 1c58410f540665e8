"""Every route of the wire contract has exactly one handler, and nothing else does."""

from __future__ import annotations

from mqlite import wire
from mqlite.server.handlers import HANDLERS


def test_every_wire_route_has_a_handler_and_no_handler_is_orphaned() -> None:
    assert set(HANDLERS) == {route.name for route in wire.ROUTES}

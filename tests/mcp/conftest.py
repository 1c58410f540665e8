"""MCP fixtures: one real broker per module (admin and monitor tokens configured); the
``mqlite-mcp`` processes are started per test by ``mcp_support``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_support import MONITOR_TOKEN, Broker, BrokerFactory, broker_factory_fixture  # noqa: F401


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    factory = BrokerFactory(tmp_path_factory.mktemp("broker"))
    try:
        yield factory({"MQLITE_MONITOR_TOKENS": MONITOR_TOKEN})
    finally:
        factory.teardown()

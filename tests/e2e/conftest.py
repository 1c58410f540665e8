"""End-to-end fixtures (the machinery lives in ``e2e_support``): a REAL ``mqlite serve``
process per test (``broker_factory``) or per module (``broker``), on a free loopback port
with a temp database, stopped with SIGTERM (SIGKILL of its process group after 15 s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from e2e_support import Broker, BrokerFactory, broker_factory_fixture  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """One shared broker per module: admin token, a 4 KiB message cap."""
    factory = BrokerFactory(tmp_path_factory.mktemp("broker"))
    try:
        yield factory({"MQLITE_MAX_MESSAGE_BYTES": "4096"})
    finally:
        factory.teardown()

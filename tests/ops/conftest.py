"""Ops tests: the Prometheus/Alertmanager/Grafana artifacts under ops/, checked with the real
tools (installed when missing: Debian packages by ops/ci/install-deps.sh, npm packages into a
cache directory) and run against a real broker. The machinery is in ``ops_support`` and
``promstack``; the real broker comes from tests/e2e's ``e2e_support``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from e2e_support import BrokerFactory
from ops_support import ensure_debian_tools


@pytest.fixture(scope="session")
def debian_tools() -> dict[str, str]:
    """prometheus, promtool, prometheus-alertmanager, amtool (installed if missing)."""
    return ensure_debian_tools()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    factory = BrokerFactory(tmp_path / "brokers")
    try:
        yield factory
    finally:
        factory.teardown()

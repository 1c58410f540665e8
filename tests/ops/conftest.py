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

from e2e_support import BrokerFactory, broker_factory_fixture  # noqa: F401 (a fixture)
from ops_support import ensure_debian_tools
from promstack import MONITOR_TOKEN, WRONG_TOKEN, Monitored, PromStack


@pytest.fixture(scope="session")
def debian_tools() -> dict[str, str]:
    """prometheus, promtool, prometheus-alertmanager, amtool (installed if missing)."""
    return ensure_debian_tools()


@pytest.fixture
def monitored(
    broker_factory: BrokerFactory, tmp_path: Path, debian_tools: dict[str, str]
) -> Iterator[Monitored]:
    """A real broker with metrics on, MONITOR_TOKEN and a diagnostic log, watched by a real
    stack: job ``mqlite`` scrapes it with the token file, job ``mqlite-wrong-token`` with
    WRONG_TOKEN. The stack's process logs are printed when the test fails."""
    fault, diagnostic_log = tmp_path / "unreadable", tmp_path / "diagnostics.jsonl"
    env = {
        "MQLITE_METRICS": "on",
        "MQLITE_MONITOR_TOKENS": MONITOR_TOKEN,
        "MQLITE_DIAGNOSTIC_LOG": str(diagnostic_log),
        "FAULTY_SERVE_TRIGGER": str(fault),
    }
    broker = broker_factory(env, faulty=True)
    with PromStack(
        tmp_path / "stack",
        target=f"127.0.0.1:{broker.port}",
        token=MONITOR_TOKEN,
        extra_tokens={"mqlite-wrong-token": WRONG_TOKEN},
    ) as stack:
        try:
            yield Monitored(broker, stack, fault, diagnostic_log)
        except BaseException:
            print(stack.logs())
            raise

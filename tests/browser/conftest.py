"""The browser tier: the /ui console in a real Chromium against a real broker process.

One Chromium for the whole session (launching it is most of the cost), one shared broker
with an administrator and a monitor token, a fresh browser context per test. The tier's
wall time is printed at the end of the run ("browser tier: ...")."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from console_support import (
    CHROMIUM_ARGS,
    MONITOR_TOKEN,
    ConsolePage,
    ensure_chromium,
    open_console,
)
from e2e_support import ADMIN_TOKEN, Broker, BrokerFactory
from playwright.sync_api import Browser, sync_playwright

_timing: dict[str, float] = {"first": 0.0, "last": 0.0, "tests": 0}


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    executable = ensure_chromium()
    started = time.monotonic()
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        _timing["launch_s"] = time.monotonic() - started
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def console_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    factory = BrokerFactory(tmp_path_factory.mktemp("console-broker"))
    try:
        yield factory({"MQLITE_TOKENS": ADMIN_TOKEN, "MQLITE_MONITOR_TOKENS": MONITOR_TOKEN})
    finally:
        factory.teardown()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    factory = BrokerFactory(tmp_path / "brokers")
    try:
        yield factory
    finally:
        factory.teardown()


@pytest.fixture
def console(browser: Browser, console_broker: Broker) -> Iterator[ConsolePage]:
    """A desktop-sized tab on the shared broker's console; fails on unexpected errors."""
    yield from open_console(browser, console_broker)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Wall span of the tier: from its first setup to its last teardown."""
    if not report.nodeid.replace("\\", "/").startswith("tests/browser/"):
        return
    _timing["first"] = min(_timing["first"] or report.start, report.start)
    _timing["last"] = max(_timing["last"], report.stop)
    if report.when == "call":
        _timing["tests"] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _timing["tests"]:
        span = _timing["last"] - _timing["first"]
        launch = _timing.get("launch_s", 0.0)
        terminalreporter.write_line(
            f"browser tier: {int(_timing['tests'])} tests in {span:.1f} s "
            f"(one Chromium for the session, launched in {launch:.1f} s)"
        )

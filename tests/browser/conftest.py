"""The browser tier: the /ui console in a real Chromium against a real broker process.

One Chromium and one shared broker (an administrator and a monitor token) for the whole
tier, a fresh browser context per test. Both are stopped as soon as the tier's last test
is torn down, not at the end of the session: Playwright's sync API keeps an asyncio loop
running on the main thread while it is open, and later tiers call ``asyncio.run()``.
The tier's wall time is printed at the end of the run ("browser tier: ...")."""

from __future__ import annotations

import sys
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from console_support import (
    CHROMIUM_ARGS,
    MONITOR_TOKEN,
    ConsolePage,
    ensure_chromium,
    open_console,
)
from e2e_support import ADMIN_TOKEN, Broker, BrokerFactory, broker_factory_fixture  # noqa: F401 (a fixture)
from playwright.sync_api import Browser, Playwright, sync_playwright

HERE = Path(__file__).resolve().parent
_timing: dict[str, float] = {"first": 0.0, "last": 0.0, "tests": 0, "launches": 0}


class _Tier:
    """The tier's shared Chromium and broker, started on first use, stopped by ``close``."""

    def __init__(self) -> None:
        self._pw_cm: Any = None
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self._factory: BrokerFactory | None = None
        self._broker: Broker | None = None

    def browser(self) -> Browser:
        if self._browser is None:
            executable = ensure_chromium()
            started = time.monotonic()
            self._pw_cm = sync_playwright()
            self._pw = self._pw_cm.__enter__()
            self._browser = self._pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            _timing["launch_s"] = time.monotonic() - started
            _timing["launches"] += 1
        return self._browser

    def broker(self, root: Path) -> Broker:
        if self._broker is None:
            self._factory = BrokerFactory(root)
            self._broker = self._factory(
                {"MQLITE_TOKENS": ADMIN_TOKEN, "MQLITE_MONITOR_TOKENS": MONITOR_TOKEN}
            )
        return self._broker

    def close(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._pw_cm.__exit__(None, None, None)
            self._browser = self._pw = self._pw_cm = None
        if self._factory is not None:
            self._factory.teardown()
            self._factory = self._broker = None


_TIER = _Tier()


def _in_tier(item: pytest.Item | None) -> bool:
    return item is not None and Path(str(item.path)).is_relative_to(HERE)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    yield  # the test's own fixtures (its browser context) are gone by now
    if _in_tier(item) and not _in_tier(nextitem):
        _TIER.close()


def pytest_sessionfinish() -> None:
    _TIER.close()


@pytest.fixture
def browser() -> Browser:
    return _TIER.browser()


@pytest.fixture
def console_broker(tmp_path_factory: pytest.TempPathFactory) -> Broker:
    return _TIER.broker(tmp_path_factory.getbasetemp() / "console-broker")


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
        terminalreporter.write_line(
            f"browser tier: {int(_timing['tests'])} tests in {span:.1f} s "
            f"({int(_timing['launches'])} Chromium launch, {_timing.get('launch_s', 0.0):.1f} s)"
        )

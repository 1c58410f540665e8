"""Driving the /ui console in Debian's Chromium with Playwright (shared OPS-TOOLING §8:
``playwright install`` cannot download a browser here, so the system one is launched by
path). One browser per test session; each test gets a fresh context (fresh
sessionStorage) and a ``ConsolePage`` that records every console error, page error and
CSP violation, and fails the test on any it did not declare expected.

Expected failures are declared, never filtered wholesale: Chromium logs each non-2xx
fetch as "Failed to load resource: ... status of 401", so a test that provokes a 401
says ``expect_http(401)``; a test that stops the broker says ``expect_offline()``.

The console must work with no network beyond the broker (no CDN, no font, no beacon):
every request the page makes to another origin is a problem too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Broker
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Request

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ARTIFACTS = HERE / "artifacts"
AXE_JS = HERE / "vendor" / "axe-core" / "axe.min.js"
CHROMIUM = "/usr/bin/chromium"
# A name that is not loopback but resolves to 127.0.0.1 in this browser only: what a
# DNS-rebinding page looks like to the broker (test_console_auth.py).
REBOUND_HOST = "rebound.test"
CHROMIUM_ARGS = [
    f"--host-resolver-rules=MAP {REBOUND_HOST} 127.0.0.1",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
DEADLINE_MS = 10_000
MONITOR_TOKEN = "mqk_browser_monitor_" + "m" * 20

# The CSP reports reach the test through a binding, not the page's own console.
CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", (e) => {
  const where = `${e.sourceFile}:${e.lineNumber}`;
  const what = e.blockedURI || "inline";
  window.mqliteCspViolation(`${e.violatedDirective} blocked ${what} at ${where}`);
});
"""

_FAILED_RESOURCE = re.compile(
    r"Failed to load resource: the server responded with a status of (\d+)"
)


def ensure_chromium() -> str:
    """Debian's Chromium, installed by ops/ci/install-deps.sh when missing."""
    if not Path(CHROMIUM).exists():
        r = subprocess.run(
            ["bash", str(REPO / "ops" / "ci" / "install-deps.sh")],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if r.returncode != 0 or not Path(CHROMIUM).exists():
            pytest.fail(f"ops/ci/install-deps.sh did not provide {CHROMIUM}:\n{r.stdout}{r.stderr}")
    assert shutil.which(CHROMIUM)
    return CHROMIUM


@dataclass
class ConsolePage:
    """One tab on the console of ``broker``; ``problems()`` lists what went wrong."""

    page: Page
    context: BrowserContext
    broker: Broker
    errors: list[str] = field(default_factory=list)
    csp: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    allowed_status: set[int] = field(default_factory=set)
    offline_ok: bool = False
    insecure_origin_ok: bool = False
    host: str | None = None  # the name the page is opened under; None = the broker's

    @property
    def origin(self) -> str:
        if self.host is None:
            return self.broker.base_url
        return f"http://{self.host}:{self.broker.port}"

    @property
    def url(self) -> str:
        return self.origin + "/ui/"

    def expect_http(self, *statuses: int) -> None:
        self.allowed_status.update(statuses)

    def expect_offline(self) -> None:
        self.offline_ok = True

    def expect_insecure_origin(self) -> None:
        """Plain HTTP under a name that is not loopback: Chromium logs that it ignores the
        Cross-Origin-Opener-Policy header (honoured on HTTPS and loopback only)."""
        self.insecure_origin_ok = True

    def _on_console(self, msg: ConsoleMessage) -> None:
        if msg.type != "error":
            return
        m = _FAILED_RESOURCE.search(msg.text)
        if m and int(m.group(1)) in self.allowed_status:
            return
        if self.insecure_origin_ok and msg.text.startswith(
            "The Cross-Origin-Opener-Policy header has been ignored, because the URL's origin"
            " was untrustworthy"
        ):
            return
        if self.offline_ok and (
            "ERR_CONNECTION_REFUSED" in msg.text or "Failed to fetch" in msg.text
        ):
            return
        self.errors.append(msg.text)

    def _on_request(self, request: Request) -> None:
        if not request.url.startswith(self.origin + "/"):
            self.foreign.append(f"{request.method} {request.url}")

    def problems(self) -> list[str]:
        return (
            [f"console error: {e}" for e in self.errors]
            + [f"CSP violation: {c}" for c in self.csp]
            + [f"request beyond the broker: {r}" for r in self.foreign]
        )

    # -- driving -------------------------------------------------------------------------

    def open(self, route: str = "") -> None:
        self.page.goto(self.url + (f"#/{route}" if route else ""))

    def sign_in(self, token: str | None) -> None:
        self.open()
        self.page.get_by_label("Access token").fill(token or "")
        self.page.get_by_role("button", name="Sign in").click()

    def signed_in(self, token: str | None) -> None:
        """Sign in and wait for the overview."""
        self.sign_in(token)
        self.heading("Overview")
        self.page.locator("#overview-data .panel").first.wait_for(timeout=DEADLINE_MS)

    def go(self, route: str) -> None:
        """Navigate inside the app (hash routes; the token stays in sessionStorage)."""
        self.page.evaluate("(r) => { location.hash = r; }", f"#/{route}")

    def heading(self, text: str) -> None:
        self.page.locator("h1#page-title", has_text=text).wait_for(timeout=DEADLINE_MS)

    def text(self, selector: str) -> str:
        return self.page.locator(selector).inner_text()

    def set_refresh(self, label: str) -> None:
        self.page.get_by_label("Refresh").select_option(label=label)

    # -- evidence ------------------------------------------------------------------------

    def screenshot(self, name: str) -> Path:
        size = self.page.viewport_size or DESKTOP
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}-{size['width']}x{size['height']}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def axe(self, name: str) -> list[dict[str, Any]]:
        """Run axe-core on the page; returns the serious/critical violations and saves
        every violation (any impact) to artifacts/axe-<name>.json."""
        if not self.page.evaluate("() => typeof window.axe === 'object'"):
            self.page.evaluate(AXE_JS.read_text())
        violations: list[dict[str, Any]] = self.page.evaluate(
            """async () => {
              const r = await axe.run(document, { resultTypes: ["violations"] });
              return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map((n) => n.target.join(" ")) }));
            }"""
        )
        size = self.page.viewport_size or DESKTOP
        ARTIFACTS.mkdir(exist_ok=True)
        out = ARTIFACTS / f"axe-{name}-{size['width']}x{size['height']}.json"
        out.write_text(json.dumps(violations, indent=2))
        return [v for v in violations if v["impact"] in ("serious", "critical")]


def open_console(
    browser: Browser, broker: Broker, *, viewport: dict[str, int] = DESKTOP, scheme: str = "light"
) -> Iterator[ConsolePage]:
    context = browser.new_context(viewport=viewport, color_scheme=scheme)  # type: ignore[arg-type]
    context.set_default_timeout(DEADLINE_MS)
    page = context.new_page()
    cp = ConsolePage(page, context, broker)
    context.expose_function("mqliteCspViolation", lambda text: cp.csp.append(str(text)))
    context.add_init_script(CSP_LISTENER)
    page.on("console", cp._on_console)
    page.on("pageerror", lambda exc: cp.errors.append(f"page error: {exc}"))
    context.on("request", cp._on_request)
    try:
        yield cp
    finally:
        context.close()
    problems = cp.problems()
    assert not problems, "\n".join(problems)

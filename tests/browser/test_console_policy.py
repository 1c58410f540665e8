"""The console's Content-Security-Policy as Chromium enforces it (issue 14: no inline
script, ``frame-ancestors 'none'``, no network beyond the broker). Each attempt is made
from inside the signed-in page, and each must be refused AND reported: that report is what
every other browser test relies on when it finds "no CSP violations"."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from console_support import DEADLINE_MS, REBOUND_HOST, ConsolePage
from e2e_support import ADMIN_TOKEN
from playwright.sync_api import Browser, expect


def violations(cp: ConsolePage, count: int) -> list[str]:
    """Wait for ``count`` reports (they arrive through a binding, asynchronously)."""
    for _ in range(DEADLINE_MS // 50):
        if len(cp.csp) >= count:
            break
        cp.page.wait_for_timeout(50)
    seen, cp.csp[:] = list(cp.csp), []  # declared: not problems of the test
    return seen


def test_inline_and_foreign_scripts_and_foreign_fetches_are_refused(console: ConsolePage) -> None:
    console.signed_in(ADMIN_TOKEN)
    page = console.page
    foreign = f"http://{REBOUND_HOST}:{console.broker.port}/"
    ran = page.evaluate(
        """async (foreign) => {
          const inline = document.createElement("script");
          inline.textContent = "window.mqliteInlineRan = true";
          document.body.append(inline);
          const remote = document.createElement("script");
          remote.src = foreign + "ui/js/main.js";
          const loaded = new Promise((ok) => {
            remote.onload = () => ok(true);
            remote.onerror = () => ok(false);
          });
          document.body.append(remote);
          return { inline: window.mqliteInlineRan === true, remote: await loaded };
        }""",
        foreign,
    )
    assert ran == {"inline": False, "remote": False}
    fetched = page.evaluate(
        """async (url) => {
          try { await fetch(url); return "fetched"; } catch (e) { return e.name; }
        }""",
        foreign,
    )
    assert fetched == "TypeError"
    seen = violations(console, 3)
    assert any(v.startswith("script-src-elem blocked inline") for v in seen), seen
    assert any(v.startswith(f"script-src-elem blocked {foreign}ui/js/main.js") for v in seen), seen
    assert any(v.startswith(f"connect-src blocked {foreign}") for v in seen), seen
    # The harness saw the page reach for another origin (a problem in any other test).
    assert f"GET {foreign}ui/js/main.js" in console.foreign, console.foreign
    console.foreign.clear()
    console.errors.clear()  # Chromium also logs each refusal as a console error


@contextmanager
def embedding_site(html: str) -> Iterator[str]:
    """Another origin (a second loopback port) whose one page is ``html``."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(html.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_another_site_cannot_frame_the_console(browser: Browser, console: ConsolePage) -> None:
    """``frame-ancestors 'none'``: a page of another origin embedding /ui/ gets no console,
    while the same page frames the broker's /healthz (no such header) as a control."""
    base = console.broker.base_url
    html = (
        f'<iframe title="console" src="{base}/ui/"></iframe>'
        f'<iframe title="control" src="{base}/healthz"></iframe>'
    )
    context = browser.new_context()
    try:
        with embedding_site(html) as outer:
            page = context.new_page()
            logged: list[str] = []
            page.on("console", lambda m: logged.append(m.text))
            page.goto(outer)
            control = page.frame_locator("iframe[title=control]").locator("body")
            expect(control).to_have_text("ok")
            for _ in range(DEADLINE_MS // 50):
                if logged:
                    break
                page.wait_for_timeout(50)
            assert any("frame-ancestors 'none'" in text for text in logged), logged
            framed = page.frame_locator("iframe[title=console]")
            assert framed.locator("#main").count() == 0  # nothing of the console rendered
    finally:
        context.close()

"""The /ui console as the broker serves it (api-reference "Open endpoints", issue 14):
auth-exempt, the security headers on every file, MQLITE_UI=off, the card's ``ui`` field,
and no way out of the console's directory whatever the request path says. The requests
that try to escape are written to the socket raw: an HTTP client would normalise the
``..`` away before the broker ever saw it."""

from __future__ import annotations

import re
import socket

import httpx
import pytest
from e2e_support import Broker, BrokerFactory, assert_error

from mqlite.server import ui

CSP_MUST = (
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
)


def raw_get(b: Broker, target: str) -> tuple[int, bytes]:
    """``GET target`` byte for byte; (status, body)."""
    with socket.create_connection((b.host, b.port), timeout=10) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def test_the_page_loads_without_a_token_with_the_security_headers(broker: Broker) -> None:
    r = httpx.get(broker.base_url + "/ui/")
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    assert '<script type="module" src="js/main.js">' in r.text
    csp = r.headers["content-security-policy"]
    for directive in CSP_MUST:
        assert directive in csp, csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert "set-cookie" not in r.headers


def test_every_shipped_file_is_served_with_its_type_and_the_headers(broker: Broker) -> None:
    assets = ui.load_assets()
    assert {"index.html", "console.css", "js/main.js", "js/api.js"} <= set(assets)
    for rel, asset in assets.items():
        r = httpx.get(f"{broker.base_url}/ui/{rel}")
        assert r.status_code == 200, rel
        assert r.content == asset.body and r.headers["content-type"] == asset.content_type, rel
        assert r.headers["content-security-policy"] == ui.CSP, rel
        assert r.headers["x-content-type-options"] == "nosniff", rel
    js = httpx.get(broker.base_url + "/ui/js/main.js")
    assert js.headers["content-type"].startswith("text/javascript")  # module scripts need it


def test_no_inline_script_or_style_in_the_page() -> None:
    """The CSP forbids them; this says so before a browser has to."""
    html = ui.load_assets()["index.html"].body.decode()
    assert "<style" not in html and " style=" not in html
    assert html.count("<script") == 1 and 'src="js/main.js"' in html
    for rel, asset in ui.load_assets().items():
        if rel.endswith(".js"):
            text = asset.body.decode()
            banned = ("innerHTML", "outerHTML", "insertAdjacentHTML", "eval(", "new Function")
            assert not [b for b in banned if b in text], rel
            # The token's only home is sessionStorage (comments may name the others).
            assert not re.search(r"\blocalStorage\s*\.|document\.cookie|indexedDB\.", text), rel


def test_ui_redirects_to_the_directory_and_unchanged_files_are_304(broker: Broker) -> None:
    r = httpx.get(broker.base_url + "/ui")
    assert r.status_code == 308 and r.headers["location"] == "/ui/"
    first = httpx.get(broker.base_url + "/ui/console.css")
    again = httpx.get(
        broker.base_url + "/ui/console.css", headers={"If-None-Match": first.headers["etag"]}
    )
    assert again.status_code == 304 and again.content == b""
    assert first.headers["cache-control"] == "no-cache"


def test_only_get_and_head_and_unknown_files_are_404_without_auth(broker: Broker) -> None:
    assert httpx.head(broker.base_url + "/ui/").status_code == 200
    r = httpx.post(broker.base_url + "/ui/index.html", content=b"x")
    assert_error(r, 405, "unimplemented")
    assert r.headers["allow"] == "GET, HEAD"
    assert_error(httpx.get(broker.base_url + "/ui/nope.js"), 404, "not_found")
    assert_error(httpx.get(broker.base_url + "/ui/__init__.py"), 404, "not_found")
    assert_error(httpx.get(broker.base_url + "/ui/js/"), 404, "not_found")


@pytest.mark.parametrize(
    "target",
    [
        "/ui/../app.py",
        "/ui/../../config.py",
        "/ui/%2e%2e/app.py",
        "/ui/%2E%2E/%2E%2E/config.py",
        "/ui/..%2fapp.py",
        "/ui/js/..%2f..%2fapp.py",
        "/ui/js/../../server/app.py",
        "/ui//etc/passwd",
        "/ui/%2fetc%2fpasswd",
        "/ui/..\\\\app.py",
        "/ui/./index.html/../../app.py",
        "/ui/__init__.py",
        "/ui/%00index.html",
    ],
)
def test_static_files_cannot_escape_the_console_directory(broker: Broker, target: str) -> None:
    status, body = raw_get(broker, target)
    assert status in (400, 404), (target, status, body[:200])
    assert b"import" not in body and b"root:" not in body, target


def test_the_card_names_the_console_and_off_removes_it(broker_factory: BrokerFactory) -> None:
    on = broker_factory({})
    assert httpx.get(on.base_url + "/").json()["ui"] == "/ui"
    off = broker_factory({"MQLITE_UI": "off"})
    assert "ui" not in httpx.get(off.base_url + "/").json()
    for path in ("/ui", "/ui/", "/ui/js/main.js"):
        assert_error(httpx.get(off.base_url + path), 404, "not_found")


def test_a_misspelt_mqlite_ui_fails_startup_naming_it(broker_factory: BrokerFactory) -> None:
    proc, *_rest = broker_factory.spawn({"MQLITE_UI": "maybe", "MQLITE_TOKENS": "mqk_x"})
    assert proc.wait(timeout=30) != 0
    err = _rest[2].read_text()
    assert "MQLITE_UI" in err, err

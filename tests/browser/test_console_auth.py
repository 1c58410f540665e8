"""Signing in to the console (issue 14 "Credentials"; access-keys "HTTP, console and
MCP"): the token lives in sessionStorage only, a wrong token is told so, send/listen keys
are told the console needs manage, and a 401 at any time returns to the token prompt."""

from __future__ import annotations

import httpx
from console_support import REBOUND_HOST, ConsolePage, open_console
from e2e_support import ADMIN_TOKEN, BrokerFactory, unique
from playwright.sync_api import Browser, Request, expect


def test_an_administrator_signs_in_and_the_token_stays_in_session_storage(
    console: ConsolePage,
) -> None:
    console.signed_in(ADMIN_TOKEN)
    page = console.page
    assert page.get_by_role("navigation", name="Main").get_by_role("link").all_inner_texts() == [
        "Overview",
        "Queues",
        "Topics",
        "Access keys",
        "Schedules",
        "Audit",
    ]
    storage = page.evaluate(
        "() => ({session: {...sessionStorage}, local: {...localStorage}, cookie: document.cookie})"
    )
    assert ADMIN_TOKEN in storage["session"].values()
    assert storage["local"] == {} and storage["cookie"] == ""
    assert ADMIN_TOKEN not in page.url
    assert console.context.cookies() == []
    # A reload of the tab keeps the session; signing out forgets the token.
    page.reload()
    console.heading("Overview")
    page.get_by_role("button", name="Sign out").click()
    console.heading("Sign in")
    assert page.evaluate("() => sessionStorage.length") == 0


def test_a_wrong_token_is_told_in_words_and_stays_on_the_prompt(console: ConsolePage) -> None:
    console.expect_http(401)
    console.sign_in("mqk_not_a_real_token")
    alert = console.page.locator("#login-outcome [role=alert]")
    alert.wait_for()
    assert "did not accept this token" in alert.inner_text()
    assert "unauthenticated" in alert.inner_text()
    assert console.page.evaluate("() => sessionStorage.length") == 0
    console.heading("Sign in")


def test_a_send_only_key_sees_the_send_form_and_nothing_else(console: ConsolePage) -> None:
    console.expect_http(400, 403)  # the permission probe: 403 = may not, 400 = may
    page = console.page
    queue = console.broker.create_queue(unique("app-send"))
    _, token = console.broker.create_key(["send"], name="send-key")
    console.sign_in(token)
    console.heading("Open a queue")
    expect(page.locator("#who")).to_have_text("Signed in: application key (send)")
    nav = page.get_by_role("navigation", name="Main")
    assert nav.get_by_role("link").all_inner_texts() == ["Open a queue"]
    page.get_by_label("Queue or subscription name").fill(queue)
    page.get_by_role("button", name="Open").click()
    console.heading(queue)
    send = page.get_by_role("form", name="Send a test message")
    send.get_by_label("Body (text)").fill("from a send key")
    with page.expect_request(lambda r: r.url.endswith(".QueueService/Send")) as asked:
        send.get_by_role("button", name="Send message").click()
    assert asked.value.headers["authorization"] == f"Bearer {token}"
    expect(page.get_by_text("Sent: seq_number")).to_be_visible()
    assert console.broker.ok("QueueService/Stats", {"queue": queue})["active"] == 1
    for hidden in ("Receive messages", "Peek messages", "Search messages", "Redrive dead letters"):
        expect(page.get_by_role("form", name=hidden)).to_have_count(0)
    for hidden in ("Dead-letter browser", "Delete queue", "Last minutes", "Messages by state"):
        expect(page.get_by_role("region", name=hidden)).to_have_count(0)
    console.go("queues")  # a manage view: said so, not a failing page
    console.heading("Manage credential needed")
    console.go("")  # no overview for a key: Observe needs monitor or manage
    console.heading("Open a queue")
    assert not console.axe("open-queue-app-key")


def test_a_listen_only_key_receives_and_settles_but_cannot_send(console: ConsolePage) -> None:
    console.expect_http(400, 403)
    page = console.page
    queue = console.broker.create_queue(unique("app-listen"))
    console.broker.send(queue, "for a listener")
    _, token = console.broker.create_key(["listen"], name="listen-key")
    console.sign_in(token)
    console.heading("Open a queue")
    expect(page.locator("#who")).to_have_text("Signed in: application key (listen)")
    console.go(f"queues/{queue}")
    console.heading(queue)
    expect(page.locator("#queue-stats")).to_contain_text("active")
    page.get_by_role("form", name="Receive messages").get_by_role("button", name="Receive").click()
    row = page.locator("#received article.message").first
    expect(row.locator("pre.body")).to_have_text("for a listener")
    with page.expect_request(lambda r: r.url.endswith(".QueueService/Complete")) as asked:
        row.get_by_role("button", name="Complete message").click()
    assert asked.value.headers["authorization"] == f"Bearer {token}"
    expect(row.locator(".lock")).to_have_text("Completed: deleted from the queue.")
    expect(page.get_by_role("form", name="Send a test message")).to_have_count(0)
    expect(page.get_by_role("region", name="Dead-letter browser")).to_have_count(0)
    expect(page.get_by_role("form", name="Search messages")).to_have_count(0)


def test_a_401_returns_to_the_token_prompt(console: ConsolePage) -> None:
    """A managed manage key is revoked while the console polls with it."""
    console.expect_http(401)
    key_id, token = console.broker.create_key(["manage"], name="short-lived")
    console.signed_in(token)
    console.broker.ok("AuthService/RevokeKey", {"id": key_id})
    console.page.get_by_role("button", name="Refresh now").click()
    console.heading("Sign in")
    notice = console.page.locator("#login-outcome [role=alert]").inner_text()
    assert "no longer accepts this token" in notice
    assert console.page.evaluate("() => sessionStorage.length") == 0


def test_with_auth_off_the_console_opens_without_a_prompt_and_operates(
    browser: Browser, broker_factory: BrokerFactory
) -> None:
    """MQLITE_TOKENS=off: no prompt, and the console's own requests pass the auth-off
    guard (a loopback Host and the page's loopback Origin) and carry no token."""
    broker = broker_factory({"MQLITE_TOKENS": "off"}, token=None)
    name = unique("open")
    posts: list[Request] = []
    for cp in open_console(browser, broker):
        cp.page.on("request", lambda r: posts.append(r) if r.method == "POST" else None)
        cp.open()
        cp.heading("Overview")
        expect(cp.page.locator("#who")).to_have_text("Signed in: auth off")
        cp.go("queues")
        create = cp.page.get_by_role("form", name="Create a queue")
        create.get_by_label("Name").fill(name)
        create.get_by_role("button", name="Create queue").click()
        expect(cp.page.get_by_role("link", name=name).first).to_be_visible()
        sent = [r.all_headers() for r in posts]
        assert sent and all("authorization" not in h for h in sent)
        assert all(h["origin"] == broker.base_url for h in sent)
        assert all(h["content-type"] == "application/json" for h in sent)
    listed = httpx.post(broker.base_url + "/mqlite.v1.AdminService/ListQueues", json={})
    assert name in [q["name"] for q in listed.json()["queues"]]


def test_with_auth_off_a_rebound_host_name_gets_no_data(
    browser: Browser, broker_factory: BrokerFactory
) -> None:
    """DNS rebinding (http.md, guards.py): the page served under a name that resolves to
    127.0.0.1 (CHROMIUM_ARGS map REBOUND_HOST) is same-origin to itself, yet every RPC is
    refused with 403 and the console says why, in words and with the code."""
    broker = broker_factory({"MQLITE_TOKENS": "off"}, token=None)
    broker.create_queue("secret-orders")
    for cp in open_console(browser, broker):
        cp.host = REBOUND_HOST
        cp.expect_http(403)
        cp.expect_insecure_origin()
        cp.open()
        cp.heading("Overview")
        outcome = cp.page.get_by_role("alert").first
        expect(outcome).to_contain_text("lacks the permission")
        expect(outcome).to_contain_text("only loopback Host names are served")
        expect(outcome).to_contain_text("permission_denied")
        assert "secret-orders" not in cp.page.content()

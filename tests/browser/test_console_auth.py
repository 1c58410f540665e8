"""Signing in to the console (issue 14 "Credentials"; access-keys "HTTP, console and
MCP"): the token lives in sessionStorage only, a wrong token is told so, send/listen keys
are told the console needs manage, and a 401 at any time returns to the token prompt."""

from __future__ import annotations

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN


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


def test_send_and_listen_keys_are_told_the_console_needs_manage(console: ConsolePage) -> None:
    console.expect_http(403)
    _, token = console.broker.create_key(["send", "listen"], name="app-key")
    console.sign_in(token)
    alert = console.page.locator("#login-outcome [role=alert]")
    alert.wait_for()
    assert "console needs manage" in alert.inner_text()
    assert console.page.get_by_role("navigation", name="Main").is_hidden()


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

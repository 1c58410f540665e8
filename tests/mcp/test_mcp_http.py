"""``mqlite-mcp --http``: the same tools over streamable HTTP, behind the broker token as
a bearer. The real process, the MCP SDK's own client, a real broker."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest
from mcp_support import (
    ADMIN_TOKEN,
    GOLDEN,
    INITIALIZE,
    Broker,
    http_listener,
    http_session,
    mcp_env,
    ok,
    run_mcp,
    tool_error,
)

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def test_the_listener_serves_the_tools_to_a_client_with_the_bearer(
    broker: Broker, tmp_path: Path
) -> None:
    queue = broker.create_queue()

    async def scenario(url: str) -> None:
        async with http_session(url, ADMIN_TOKEN) as c:
            listed = await c.list_tools()
            shown = [
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools
            ]
            assert shown == json.loads(GOLDEN.read_text(encoding="utf-8"))
            sent = ok(await c.call_tool("send", {"queue": queue, "body": "over http"}))
            (m,) = ok(await c.call_tool("receive", {"queue": queue}))["messages"]
            assert ([m["seq_number"]], m["body_text"]) == (sent["seq_numbers"], "over http")
            settle = {"queue": queue, "seq_number": m["seq_number"], "lock_token": m["lock_token"]}
            assert ok(await c.call_tool("complete", settle)) == {"ok": True}
            assert ok(await c.call_tool("complete", settle)) == {"ok": True}  # a receipt
            stale = {**settle, "lock_token": "f" * 32}
            assert tool_error(await c.call_tool("complete", stale))["code"] == "lock_lost"

    with http_listener(mcp_env(broker), tmp_path / "err") as (_, url):
        anyio.run(scenario, url)
    assert ADMIN_TOKEN not in (tmp_path / "err").read_text()


def test_the_listener_refuses_a_missing_or_wrong_bearer(broker: Broker, tmp_path: Path) -> None:
    with http_listener(mcp_env(broker), tmp_path / "err") as (_, url):
        for headers in (
            {},
            {"Authorization": "Bearer mqk_wrong_" + "d" * 30},
            {"Authorization": f"Basic {ADMIN_TOKEN}"},
            {"Authorization": f"Bearer {ADMIN_TOKEN}x"},
        ):
            r = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=10)
            assert r.status_code == 401, (headers, r.status_code, r.text)
            assert r.headers["www-authenticate"].startswith("Bearer")
            assert r.json()["code"] == "unauthenticated"
        good = httpx.post(
            url,
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=10,
        )
        assert good.status_code == 200, good.text
        assert good.json()["result"]["serverInfo"]["name"] == "mqlite-mcp"

        async def wrong_client() -> None:
            async with http_session(url, "mqk_wrong_" + "e" * 30) as c:
                await c.list_tools()

        with pytest.raises(BaseException):  # noqa: B017 (the SDK's exception group)
            anyio.run(wrong_client)
    log = (tmp_path / "err").read_text()
    assert "refused: missing or wrong bearer token" in log and "mqk_wrong_" not in log


def test_the_listener_answers_hostile_requests_with_a_clear_4xx(
    broker: Broker, tmp_path: Path
) -> None:
    """Even with the right bearer: a foreign Host or Origin (DNS rebinding, a web page),
    a body that is not JSON, or one over the SDK's 4 MiB cap is refused before any tool
    runs, each with its own 4xx; never a 500, and the listener goes on serving."""
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {ADMIN_TOKEN}"}
    json_auth = {**auth, "Content-Type": "application/json"}
    with http_listener(mcp_env(broker), tmp_path / "err") as (_, url):
        for headers, body, status in (
            ({**json_auth, "Host": "evil.example"}, json.dumps(INITIALIZE).encode(), 421),
            ({**json_auth, "Origin": "https://evil.example"}, json.dumps(INITIALIZE).encode(), 403),
            ({**auth, "Content-Type": "text/plain"}, json.dumps(INITIALIZE).encode(), 400),
            (json_auth, b"{not json", 400),
            (json_auth, b'{"a": "' + b"x" * (4 << 20) + b'"}', 413),
        ):
            r = httpx.post(url, content=body, headers=headers, timeout=20)
            assert r.status_code == status, (headers.get("Host"), r.status_code, r.text[:200])
        r = httpx.post(url, json=INITIALIZE, headers=auth, timeout=10)
        assert r.status_code == 200 and r.json()["result"]["serverInfo"]["name"] == "mqlite-mcp"
    log = (tmp_path / "err").read_text()
    assert "Invalid Host header: evil.example" in log and "Traceback" not in log


def test_http_needs_a_token_to_require(broker: Broker) -> None:
    r = run_mcp(mcp_env(broker, None), ["--http", "127.0.0.1:1"])
    assert r.returncode == 2 and "--http needs MQLITE_TOKEN" in r.stderr


def test_a_taken_address_fails_at_startup(broker: Broker) -> None:
    r = run_mcp(mcp_env(broker), ["--http", f"127.0.0.1:{broker.port}"])
    assert r.returncode != 0 and "address already in use" in r.stderr

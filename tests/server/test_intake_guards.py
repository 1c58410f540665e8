"""The intake's pieces without a socket: the in-flight byte budget, the JSON content-type
rule, the item bound; the auth-off guard's Host and Origin parsing."""

from __future__ import annotations

import asyncio

import pytest

from mqlite import defaults, errors, wire
from mqlite.server import guards
from mqlite.server.intake import ByteBudget, decode, require_json


def test_the_budget_admits_what_fits_and_makes_the_rest_wait() -> None:
    async def scenario() -> None:
        budget = ByteBudget(100)
        await budget.acquire(60, timeout=1)
        await budget.acquire(40, timeout=1)
        waiting = asyncio.ensure_future(budget.acquire(30, timeout=5))
        await asyncio.sleep(0)
        assert not waiting.done()
        await budget.release(60)
        await asyncio.wait_for(waiting, 1)
        assert budget.used == 70
        with pytest.raises(errors.Unavailable, match="too many large requests"):
            await budget.acquire(50, timeout=0.05)
        assert budget.used == 70

    asyncio.run(scenario())


def test_one_request_larger_than_the_budget_takes_all_of_it() -> None:
    async def scenario() -> None:
        budget = ByteBudget(100)
        await budget.acquire(1000, timeout=1)
        assert budget.used == 100
        await budget.release(1000)
        assert budget.used == 0

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "value", [b"application/json", b"Application/JSON", b"application/json; charset=utf-8"]
)
def test_json_content_types_pass(value: bytes) -> None:
    require_json({"headers": [(b"content-type", value)]})


@pytest.mark.parametrize(
    "headers",
    [[], [(b"content-type", b"text/plain")], [(b"content-type", b"application/jsonx")]],
)
def test_anything_else_is_415(headers: list[tuple[bytes, bytes]]) -> None:
    with pytest.raises(errors.UnsupportedMediaType) as exc:
        require_json({"headers": headers})
    assert exc.value.http_status == 415 and exc.value.code == "invalid_argument"


def test_a_body_with_too_many_items_is_refused_before_decoding() -> None:
    route = {r.name: r for r in wire.ROUTES}["QueueService/CompleteBatch"]
    item = b'{"seq_number":1,"lock_token":"t"},'
    body = bytearray(b'{"queue":"q","messages":[' + item * 70_000 + b"]}")
    with pytest.raises(errors.InvalidArgument, match="over the limit of 262144"):
        asyncio.run(decode(route, body))
    assert defaults.MAX_REQUEST_ITEMS == 1 << 18


@pytest.mark.parametrize(
    ("authority", "host"),
    [
        ("127.0.0.1:6754", "127.0.0.1"),
        ("LocalHost", "localhost"),
        ("localhost.:80", "localhost"),
        ("[::1]:6754", "::1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("evil.example:6754", "evil.example"),
    ],
)
def test_host_names(authority: str, host: str) -> None:
    assert guards.host_name(authority) == host


def test_origins() -> None:
    assert guards.origin_host("http://127.0.0.1:3000") == "127.0.0.1"
    assert guards.origin_host("https://[::1]") == "::1"
    assert guards.origin_host("null") is None
    assert guards.origin_host("") is None

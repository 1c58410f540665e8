"""Retry policy: bounded, safe calls only; a Send is never resent once it may have
reached the broker; a dead broker surfaces as ConnectionFailed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fake_server import FakeServer
from sdk_support import free_port, start_broker

import mqlite
import mqlite.aio
from mqlite import OutMessage, RetryPolicy, errors

FAST = RetryPolicy(attempts=3, base_ms=1, max_backoff_ms=5)

UNSAFE_CALLS = {
    "send_one": lambda c: c.send_one("q", OutMessage(b"x")),
    "send": lambda c: c.send("q", [OutMessage(b"x", message_id="m")]),
    "schedule": lambda c: c.schedule("q", [OutMessage(b"x")], at_ms=4_000_000_000_000),
    "create_key": lambda c: c.create_key(mqlite.generate_key_id(), "k", ["send"]),
    "create_push": lambda c: c.create_push("q", "https://hooks.example.com/h"),
    "cancel": lambda c: c.cancel("q", 1),
    "purge": lambda c: c.purge("q"),
}
SAFE_CALLS = {
    "stats": lambda c: c.stats("q"),
    "peek": lambda c: c.peek("q"),
    "receive": lambda c: c.receive("q"),
    "complete": lambda c: c.complete("q", 1, "t"),
    "renew_batch": lambda c: c.renew_batch("q", [(1, "t")]),
    "list_keys": lambda c: c.list_keys(),
    "status": lambda c: c.status(),
}


@pytest.mark.parametrize("name", sorted(UNSAFE_CALLS))
def test_dropped_connection_never_resends_unsafe_calls(name: str) -> None:
    with FakeServer("drop") as srv, mqlite.connect(srv.url, "t", retry=FAST) as c:
        with pytest.raises(mqlite.ConnectionFailed, match="may or may not"):
            UNSAFE_CALLS[name](c)
        assert srv.requests == 1


@pytest.mark.parametrize("name", sorted(SAFE_CALLS))
def test_dropped_connection_retries_safe_calls_a_bounded_number_of_times(name: str) -> None:
    with FakeServer("drop") as srv, mqlite.connect(srv.url, "t", retry=FAST) as c:
        with pytest.raises(mqlite.ConnectionFailed):
            SAFE_CALLS[name](c)
        assert srv.requests == FAST.attempts


def test_503_is_retried_for_safe_calls_only() -> None:
    with FakeServer("unavailable") as srv, mqlite.connect(srv.url, "t", retry=FAST) as c:
        with pytest.raises(errors.OutcomeUnknown):
            c.send_one("q", OutMessage(b"x"))
        assert srv.requests == 1
        with pytest.raises(errors.OutcomeUnknown):
            c.peek("q")
        assert srv.requests == 1 + FAST.attempts


def test_nothing_listening_is_connection_failed_for_every_call() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with mqlite.connect(url, "t", retry=FAST) as c:
        for call in (*UNSAFE_CALLS.values(), *SAFE_CALLS.values()):
            # The OS's words, not a Python class name ("ConnectionRefusedError: [Errno 111]").
            with pytest.raises(
                mqlite.ConnectionFailed,
                match=r"cannot connect to the broker \(Connection refused\)$",
            ):
                call(c)


def test_a_stopped_broker_is_connection_failed(tmp_path: Path) -> None:
    broker = start_broker(tmp_path)
    try:
        c = mqlite.connect(broker.url, broker.token, retry=FAST)
        c.create_queue("q")
        assert c.send_one("q", OutMessage(b"x")) > 0  # a pooled keep-alive connection
    finally:
        broker.stop()
    with pytest.raises(mqlite.ConnectionFailed) as info:
        c.send_one("q", OutMessage(b"x"))
    assert info.value.code == "unavailable" and info.value.http_status == 503
    with pytest.raises(mqlite.ConnectionFailed):
        c.stats("q")
    c.close()


def test_no_retry_policy() -> None:
    with FakeServer("drop") as srv, mqlite.connect(srv.url, retry=RetryPolicy(1)) as c:
        with pytest.raises(mqlite.ConnectionFailed):
            c.stats("q")
        assert srv.requests == 1


def test_retry_policy_bounds() -> None:
    p = RetryPolicy(attempts=5, base_ms=100, max_backoff_ms=300)
    assert all(0 <= p.backoff_s(n) <= 0.3 for n in range(10) for _ in range(20))
    with pytest.raises(errors.InvalidArgument):
        RetryPolicy(attempts=0)


# -- the asyncio client follows the same rules ----------------------------------------------


def _arun(coro: Any) -> Any:
    return asyncio.run(coro)


def test_aio_send_is_not_resent_and_reads_are() -> None:
    async def main(srv: FakeServer) -> None:
        async with mqlite.aio.connect(srv.url, "t", retry=FAST) as c:
            with pytest.raises(mqlite.ConnectionFailed):
                await c.send_one("q", OutMessage(b"x"))
            assert srv.requests == 1
            with pytest.raises(mqlite.ConnectionFailed):
                await c.stats("q")
            assert srv.requests == 1 + FAST.attempts

    with FakeServer("drop") as srv:
        _arun(main(srv))


def test_aio_503_and_refused() -> None:
    async def main(srv: FakeServer) -> None:
        async with mqlite.aio.connect(srv.url, retry=FAST) as c:
            with pytest.raises(errors.OutcomeUnknown):
                await c.send_one("q", OutMessage(b"x"))
            with pytest.raises(errors.OutcomeUnknown):
                await c.receive("q")
            assert srv.requests == 1 + FAST.attempts
        async with mqlite.aio.connect(f"http://127.0.0.1:{free_port()}", retry=FAST) as c:
            with pytest.raises(mqlite.ConnectionFailed, match="cannot connect"):
                await c.send_one("q", OutMessage(b"x"))

    with FakeServer("unavailable") as srv:
        _arun(main(srv))

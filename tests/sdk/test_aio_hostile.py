"""The asyncio transport against a hostile local server: huge or too many headers, huge
and invalid chunk sizes, endless close-delimited bodies, stalls mid-head, truncation and
random bytes. Each ends in ``ConnectionFailed`` within bounded time and memory; a
well-behaved (if unusual) answer still parses."""

from __future__ import annotations

import asyncio
import contextlib
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mqlite
import mqlite.aio
from mqlite import RetryPolicy, errors
from mqlite.sdk import aio_transport

Writer = Callable[[asyncio.StreamWriter], Awaitable[None]]

TIMEOUT_S = 0.5  # the client's timeout: bounds connecting and each read of an answer
CAP = 1 << 20  # the client's max_response_bytes in these tests
STATS = b'{"queue":"q","active":3}'
ENDLESS_LIMIT = 64 << 20  # the server gives up writing after this much, whatever happens


async def _read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            await reader.readexactly(int(line.split(b":", 1)[1]))


async def _exchange(write: Writer, **options: Any) -> tuple[Any, float, int]:
    """Serve one answer with ``write``; (the client's result or exception, seconds, peak
    bytes the client side allocated while it ran)."""

    handlers: set[asyncio.Task[Any]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await _read_request(reader)
            await write(writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client gave up, or the test is over: that is the point
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    options = {"timeout": TIMEOUT_S, "retry": RetryPolicy(1), "max_response_bytes": CAP, **options}
    tracemalloc.start()
    started = time.monotonic()
    try:
        async with mqlite.aio.connect(f"http://127.0.0.1:{port}", "t", **options) as client:
            try:
                result: Any = await client.stats("q")
            except errors.MQLiteError as exc:
                result = exc
        return result, time.monotonic() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers)
        server.close()
        await server.wait_closed()


def run(write: Writer, **options: Any) -> tuple[Any, float, int]:
    return asyncio.run(_exchange(write, **options))


def send(*parts: bytes) -> Writer:
    async def write(w: asyncio.StreamWriter) -> None:
        for part in parts:
            w.write(part)
            await w.drain()

    return write


def then_stall(*parts: bytes) -> Writer:
    async def write(w: asyncio.StreamWriter) -> None:
        await send(*parts)(w)
        await asyncio.get_running_loop().create_future()  # silent until the test ends it

    return write


def endless(head: bytes, chunk: bytes) -> Writer:
    async def write(w: asyncio.StreamWriter) -> None:
        w.write(head)
        for _ in range(ENDLESS_LIMIT // len(chunk)):
            w.write(chunk)
            await w.drain()

    return write


OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"

HOSTILE: dict[str, tuple[Writer, str]] = {
    "huge header": (
        then_stall(OK_HEAD + b"X-Big: " + b"a" * (2 * aio_transport.MAX_HEAD_BYTES)),
        "head over",
    ),
    "endless header": (endless(OK_HEAD + b"X-Big: ", b"a" * 65536), "head over"),
    "too many headers": (
        then_stall(OK_HEAD + b"".join(b"X-%d: v\r\n" % i for i in range(1000))),
        "header lines",
    ),
    "chunk size overflows": (
        send(OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + b"F" * 40 + b"\r\n"),
        "malformed answer",
    ),
    "chunk size invalid": (
        send(OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
        "malformed answer",
    ),
    "chunk size huge, data endless": (
        endless(OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n7FFFFFFFFFFF\r\n", b"x" * 65536),
        "body over",
    ),
    "content-length huge, data endless": (
        endless(OK_HEAD + b"Content-Length: 999999999999\r\n\r\n", b"x" * 65536),
        "body over",
    ),
    "close-delimited body endless": (endless(OK_HEAD + b"\r\n", b"x" * 65536), "body over"),
    "stall mid-head": (then_stall(b"HTTP/1.1 200 OK\r\nContent-"), "TimeoutError"),
    "stall mid-body": (
        then_stall(OK_HEAD + b"Content-Length: 100\r\n\r\n{"),
        "TimeoutError",
    ),
    "never answers": (then_stall(), "TimeoutError"),
    "truncated body": (
        send(OK_HEAD + b"Content-Length: 100\r\n\r\n{"),
        "closed before the answer was complete",
    ),
    "closed before a head": (send(b"HTTP/1.1 2"), "closed before the answer was complete"),
    "garbage status line": (send(b"SSH-2.0-OpenSSH\r\n\r\n"), "malformed answer"),
    "negative content-length": (
        send(OK_HEAD + b"Content-Length: -5\r\n\r\n"),
        "malformed answer",
    ),
    "conflicting framing": (
        send(OK_HEAD + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        "malformed answer",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_answers_end_in_connection_failed(name: str) -> None:
    write, detail = HOSTILE[name]
    result, elapsed, peak = run(write)
    assert isinstance(result, mqlite.ConnectionFailed), (name, result)
    assert detail in result.message, result.message
    assert "may or may not have been applied" in result.message  # maybe sent: honest
    assert elapsed < TIMEOUT_S * 4 + 1, elapsed  # bounded by the client's own timeout
    assert peak < 4 * CAP + (1 << 20), peak  # bounded by the cap, not by the server


def test_the_deadline_bounds_a_slowloris_trickle() -> None:
    """One byte just inside the idle timeout, forever: the exchange deadline ends it."""

    async def write(w: asyncio.StreamWriter) -> None:
        w.write(OK_HEAD + b"Content-Length: 1000000\r\n\r\n")
        for _ in range(1000):
            w.write(b"x")
            await w.drain()
            await asyncio.sleep(TIMEOUT_S / 5)

    result, elapsed, _ = run(write, timeout=TIMEOUT_S * 2)
    assert isinstance(result, mqlite.ConnectionFailed) and "TimeoutError" in result.message
    assert elapsed < TIMEOUT_S * 2 + 1.5


WELL_BEHAVED: dict[str, bytes] = {
    "content-length": OK_HEAD + b"Content-Length: %d\r\n\r\n" % len(STATS) + STATS,
    "chunked with trailers": OK_HEAD
    + b"Transfer-Encoding: chunked\r\n\r\n"
    + b"5;ext=1\r\n"
    + STATS[:5]
    + b"\r\n"
    + b"%x\r\n" % (len(STATS) - 5)
    + STATS[5:]
    + b"\r\n0\r\nX-Trailer: t\r\n\r\n",
    "interim 100 first": b"HTTP/1.1 100 Continue\r\n\r\n"
    + OK_HEAD
    + b"Content-Length: %d\r\n\r\n" % len(STATS)
    + STATS,
    "close-delimited": OK_HEAD + b"Connection: close\r\n\r\n" + STATS,
    "http/1.0": b"HTTP/1.0 200 OK\r\n\r\n" + STATS,
}


@pytest.mark.parametrize("name", sorted(WELL_BEHAVED))
def test_unusual_but_valid_answers_parse(name: str) -> None:
    result, _, _ = run(send(WELL_BEHAVED[name]))
    assert result == mqlite.Stats("q", active=3), result


def test_an_error_answer_is_the_brokers_error_not_a_transport_failure() -> None:
    body = b'{"code":"not_found","message":"queue \'q\' not found","reason":"queue_not_found"}'
    head = b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n" % len(body)
    result, _, _ = run(send(head + body))
    assert type(result) is errors.QueueNotFound


_PIECES = st.sampled_from(
    [
        b"HTTP/1.1 200 OK\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"Content-Length: 24\r\n",
        b"Content-Length: 99999999999\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"\r\n",
        b"18\r\n",
        b"FFFFFFFFFFFFFFFFFFFFFF\r\n",
        STATS,
        b"0\r\n\r\n",
        b"\x00\xff",
        b":",
        b" ",
    ]
)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(parts=st.lists(_PIECES | st.binary(max_size=40), max_size=12))
def test_random_answers_are_a_value_or_connection_failed(parts: list[bytes]) -> None:
    """Whatever the bytes: an answer, a broker error, or ConnectionFailed; never another
    exception and never a hang (the server closes after writing)."""
    result, elapsed, _ = run(send(*parts), timeout=0.3)
    assert isinstance(result, mqlite.Stats | errors.MQLiteError), result
    assert elapsed < 3


@pytest.mark.parametrize(("extra", "expected"), [(b"", 1), (b"Connection: close\r\n", 3)])
def test_keep_alive_reuses_the_connection_unless_told_to_close(extra: bytes, expected: int) -> None:
    answer = OK_HEAD + extra + b"Content-Length: %d\r\n\r\n" % len(STATS) + STATS

    async def main() -> int:
        connections = 0

        handlers: list[asyncio.Task[Any]] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal connections
            connections += 1
            handlers.append(asyncio.current_task())  # type: ignore[arg-type]
            with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
                while True:
                    await _read_request(reader)
                    writer.write(answer)
                    await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with mqlite.aio.connect(f"http://127.0.0.1:{port}", "t") as client:
            for _ in range(3):
                assert await client.stats("q") == mqlite.Stats("q", active=3)
        await asyncio.wait_for(asyncio.gather(*handlers), 5)  # each saw its client's EOF
        server.close()
        await server.wait_closed()
        return connections

    assert asyncio.run(main()) == expected

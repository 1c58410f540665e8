"""What the transports keep from one exchange to the next on a keep-alive connection, and
that the time bounds still hold on a reused one (issue 29 §3 cut the per-request work).

- The sync transport keeps a plain-TCP socket blocking and bounds each send and read by
  the kernel's SO_SNDTIMEO / SO_RCVTIMEO (a Python socket timeout polls before every
  call); a stall on a reused connection still ends in "timed out", and a long poll's
  longer bound is set for its request alone.
- The asyncio transport keeps one timer per connection across exchanges (re-armed when it
  fires) instead of one per request; a stall on a reused connection still ends at its
  own deadline, neither at the earlier one the kept timer was set for nor never.

The server answers a connection's first ``answered`` requests with a Stats body and
leaves the next one unanswered, so the stall happens on a connection that was reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import mqlite
import mqlite.aio
from mqlite import RetryPolicy, errors

TIMEOUT_S = 0.5
STATS = b'{"queue":"q","active":3}'
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%b" % (len(STATS), STATS)


class StallsAfter:
    """A loopback server: each connection gets ``answered`` answers, then silence."""

    def __init__(self, answered: int) -> None:
        self.answered = answered
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            for _ in range(self.answered):
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                conn.sendall(ANSWER)
            while conn.recv(65536):  # read the next request; never answer it
                pass

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


@pytest.fixture
def stalls_after_one() -> Iterator[StallsAfter]:
    server = StallsAfter(1)
    yield server
    server.close()


def _rcvtimeo(sock: socket.socket) -> float:
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.calcsize("ll"))
    sec, usec = struct.unpack("ll", raw)
    return sec + usec / 1e6


def test_sync_plain_tcp_socket_is_blocking_and_the_kernel_bounds_each_read() -> None:
    server = StallsAfter(3)
    try:
        with mqlite.connect(server.url, "t", timeout=TIMEOUT_S, retry=RetryPolicy(1)) as c:
            assert c.stats("q") == mqlite.Stats("q", active=3)
            (conn,) = c._pool._idle
            assert conn.sock.gettimeout() is None  # no poll(2) before each send and read
            assert _rcvtimeo(conn.sock) == pytest.approx(TIMEOUT_S, abs=0.01)
            # a long poll waits timeout + wait_ms: set for its request, on the same socket
            # (the canned answer decodes leniently as an empty Receive)
            assert c.receive("q", wait_ms=1500) == []
            assert c._pool._idle == [conn]
            assert _rcvtimeo(conn.sock) == pytest.approx(TIMEOUT_S + 1.5, abs=0.01)
            assert c.stats("q") == mqlite.Stats("q", active=3)
            assert _rcvtimeo(conn.sock) == pytest.approx(TIMEOUT_S, abs=0.01)
    finally:
        server.close()


def test_sync_a_stall_on_a_reused_connection_ends_in_timed_out(
    stalls_after_one: StallsAfter,
) -> None:
    with mqlite.connect(
        stalls_after_one.url, "t", timeout=TIMEOUT_S, retry=RetryPolicy(1)
    ) as client:
        assert client.stats("q") == mqlite.Stats("q", active=3)
        started = time.monotonic()
        with pytest.raises(mqlite.ConnectionFailed) as failed:
            client.stats("q")
        elapsed = time.monotonic() - started
    assert "timed out" in failed.value.message, failed.value.message
    assert "may or may not have been applied" in failed.value.message
    assert TIMEOUT_S * 0.8 < elapsed < TIMEOUT_S * 4 + 1, elapsed


WAIT_MS = 1000  # the stalled request is a long poll: its deadline is TIMEOUT_S + 1 s


async def _stall_on_a_long_poll(url: str) -> tuple[Any, float]:
    async with mqlite.aio.connect(url, "t", timeout=TIMEOUT_S, retry=RetryPolicy(1)) as client:
        assert await client.stats("q") == mqlite.Stats("q", active=3)
        # the first exchange's timer is kept, due TIMEOUT_S after the first request: a
        # second before the long poll's own deadline
        started = time.monotonic()
        try:
            result: Any = await asyncio.wait_for(
                client.receive("q", wait_ms=WAIT_MS), TIMEOUT_S * 8 + WAIT_MS / 1000
            )
        except errors.MQLiteError as exc:
            result = exc
        return result, time.monotonic() - started


def test_aio_a_stall_on_a_reused_connection_ends_at_its_own_deadline(
    stalls_after_one: StallsAfter,
) -> None:
    result, elapsed = asyncio.run(_stall_on_a_long_poll(stalls_after_one.url))
    assert isinstance(result, mqlite.ConnectionFailed), result
    assert "TimeoutError" in result.message, result.message
    # not when the kept timer first fired (TIMEOUT_S in), and not never
    deadline = TIMEOUT_S + WAIT_MS / 1000
    assert deadline * 0.9 < elapsed < deadline * 3, elapsed


def test_aio_back_to_back_exchanges_share_one_timer() -> None:
    server = StallsAfter(50)
    scheduled = 0

    async def main() -> None:
        nonlocal scheduled
        loop = asyncio.get_running_loop()
        call_at = loop.call_at

        def counting(when: float, callback: Any, *args: Any, **kw: Any) -> asyncio.TimerHandle:
            nonlocal scheduled
            scheduled += 1
            return call_at(when, callback, *args, **kw)

        async with mqlite.aio.connect(server.url, "t", timeout=30) as client:
            assert await client.stats("q") == mqlite.Stats("q", active=3)
            loop.call_at = counting  # type: ignore[method-assign]
            for _ in range(20):
                assert await client.stats("q") == mqlite.Stats("q", active=3)

    try:
        asyncio.run(main())
    finally:
        server.close()
    assert scheduled == 0  # the first exchange's timer covers the next twenty

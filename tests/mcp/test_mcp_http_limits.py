"""``mqlite-mcp --http`` serves behind the broker's own HTTP bounds (issue 26): the same
implementation (``mqlite.httpguard``) as ``mqlite serve``, so a hostile client cannot
stall authorized calls with a huge pre-auth header, lock clients out with idle sockets,
or starve short tool calls with parked long polls. Real processes: a broker, the
listener, loopback sockets; every loop bounded in count and time."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from mcp_support import ADMIN_TOKEN, Broker, http_listener, mcp_env

from mqlite import defaults
from mqlite.mcp.lanes import LONG_POLL_THREADS
from waiting import poll_real_process

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Authorization": f"Bearer {ADMIN_TOKEN}",
}
ATTACK_BYTES = 64 << 20  # the most a hostile header streams before the test gives up
ATTACK_DEADLINE_S = 20.0
CALL_BOUND_S = 2.0  # what an authorized short call may take beside an attack


def call(url: str, name: str, arguments: dict[str, Any], timeout: float = 30.0) -> Any:
    """One stateless ``tools/call`` over HTTP; its JSON-RPC result."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}  # fmt: skip
    r = httpx.post(url, json=body, headers=HEADERS, timeout=timeout)
    assert r.status_code == 200, (r.status_code, r.text)
    result = r.json()["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]


def timed_call(url: str, name: str, arguments: dict[str, Any]) -> float:
    start = time.monotonic()
    call(url, name, arguments)
    return time.monotonic() - start


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def stream_header(port: int) -> tuple[int, bytes, float]:
    """Stream one endless header value, unauthenticated; (bytes sent, what came back,
    seconds until the server stopped it)."""
    chunk = b"a" * (256 << 10)
    sent = 0
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.settimeout(5)
        try:
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Junk: ")
            while sent < ATTACK_BYTES and time.monotonic() - start < ATTACK_DEADLINE_S:
                s.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass  # refused and closed: the point
        answer = b""
        with contextlib.suppress(OSError):
            answer = s.recv(4096)
    return sent, answer, time.monotonic() - start


def test_a_huge_pre_auth_header_is_refused_quickly_while_an_authorized_call_completes(
    broker: Broker, tmp_path: Path
) -> None:
    with http_listener(mcp_env(broker), tmp_path / "err") as (_, url):
        call(url, "list_queues", {})  # warm
        outcome: list[tuple[int, bytes, float]] = []
        attacker = threading.Thread(target=lambda: outcome.append(stream_header(port_of(url))))
        attacker.start()
        took = [timed_call(url, "list_queues", {}) for _ in range(5)]
        attacker.join(ATTACK_DEADLINE_S + 10)
        sent, answer, seconds = outcome[0]
        assert answer.startswith(b"HTTP/1.1 431"), (answer[:200], sent, seconds, took)
        assert b'"headers_too_large"' in answer
        assert sent < 8 << 20, sent  # refused after its first 16 KiB, not after 64 MiB
        assert seconds < 5, seconds
        assert max(took) < CALL_BOUND_S, took


def closed_by_the_peer(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the server closed (readable: EOF, since it sends nothing)."""
    poller = select.poll()
    for s in sockets:
        poller.register(s, select.POLLIN)
    return len(poller.poll(0))


def test_idle_sockets_beyond_the_cap_do_not_lock_clients_out(
    broker: Broker, tmp_path: Path
) -> None:
    nofile = 256  # the cap becomes 256 - FD_RESERVE: more idle sockets than descriptors
    idle = nofile + 64
    with http_listener(mcp_env(broker), tmp_path / "err", nofile=nofile) as (_, url):
        port = port_of(url)
        sockets = []
        try:
            for _ in range(idle):
                sockets.append(socket.create_connection(("127.0.0.1", port), 5))
            # Every connection past the cap closes one (the oldest idle): once the listener
            # has accepted them all, at least that many read EOF here.
            over = idle - (nofile - defaults.FD_RESERVE)
            poll_real_process(
                f"the listener to close {over} idle sockets",
                lambda: closed_by_the_peer(sockets) >= over,
                deadline_s=10,
            )
            assert timed_call(url, "list_queues", {}) < CALL_BOUND_S
            # The oldest idle sockets were closed to make room (they read EOF).
            sockets[0].settimeout(5)
            assert sockets[0].recv(1) == b""
        finally:
            for s in sockets:
                s.close()


def test_an_idle_connection_is_closed_after_the_head_deadline(
    broker: Broker, tmp_path: Path
) -> None:
    with (
        http_listener(mcp_env(broker), tmp_path / "err") as (_, url),
        socket.create_connection(("127.0.0.1", port_of(url)), 5) as s,
    ):
        start = time.monotonic()
        s.settimeout(defaults.HEAD_TIMEOUT_S + 5)
        assert s.recv(1) == b""
        assert time.monotonic() - start < defaults.HEAD_TIMEOUT_S + 3


PARKED = 45
PARK_MS = 10_000


def connections_to(pid: int, port: int) -> int:
    """Established TCP connections of process ``pid`` to loopback ``port`` (its sockets'
    inodes matched in the kernel's table): a real process's calls in flight to the broker."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                far_port = int(fields[2].rsplit(":", 1)[1], 16)
                if fields[3] == "01" and far_port == port and fields[9] in inodes:
                    count += 1
    return count


def test_parked_receives_do_not_delay_short_tool_calls(broker: Broker, tmp_path: Path) -> None:
    queue = broker.create_queue()
    with (
        http_listener(mcp_env(broker), tmp_path / "err") as (mcp, url),
        ThreadPoolExecutor(PARKED) as pool,
    ):
        call(url, "list_queues", {})  # warm
        parked = [
            pool.submit(call, url, "receive", {"queue": queue, "wait_time_ms": PARK_MS})
            for _ in range(PARKED)
        ]
        # The long-poll lane is full: each of its threads holds a connection of its own to
        # the broker, its Receive parked there (the rest wait for a lane thread).
        poll_real_process(
            f"mqlite-mcp to hold {LONG_POLL_THREADS} connections to the broker (its full "
            "long-poll lane)",
            lambda: connections_to(mcp.pid, broker.port) >= LONG_POLL_THREADS,
            deadline_s=20,
        )
        took = [timed_call(url, "list_queues", {}) for _ in range(3)]
        sent = timed_call(url, "send", {"queue": queue, "body": "wakes one"})
        results = [f.result(timeout=PARK_MS / 1000 * 3 + 10) for f in parked]
        assert max(took) < CALL_BOUND_S, took
        assert sent < CALL_BOUND_S, sent
        assert sum(len(r["messages"]) for r in results) == 1

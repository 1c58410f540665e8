"""Hostile receivers (docs/push.md "Isolation"): an endpoint that never answers, answers
one byte a second, sends a 2 GB answer, or resets every connection delays neither another
push target nor the broker's own API; each is cut at its deadline (10 s here) or its 64 KiB read."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator

import pytest
from push_support import RawServer, Receiver

import mqlite
from mqlite import OutMessage, QueueConfig

SLOW_RETRY = QueueConfig(retry_initial_delay_ms=3_600_000, retry_max_delay_ms=3_600_000)


def _read_head(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk


def never_answers(conn: socket.socket) -> None:
    _read_head(conn)
    time.sleep(30)


def one_byte_a_second(conn: socket.socket) -> None:
    _read_head(conn)
    for b in b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n":
        conn.sendall(bytes([b]))
        time.sleep(1)


class Flood:
    """200 with a 2 GB body, streamed until the client hangs up; counts what it sent."""

    def __init__(self) -> None:
        self.sent = 0

    def __call__(self, conn: socket.socket) -> None:
        _read_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2147483648\r\n\r\n")
        chunk = b"\0" * 65536
        while self.sent < 2 * 1024**3:
            conn.sendall(chunk)
            self.sent += len(chunk)


def resets(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.recv(100)
    conn.close()  # RST


@pytest.fixture
def servers() -> Iterator[list[RawServer]]:
    made: list[RawServer] = []
    yield made
    for s in made:
        s.close()


def test_hostile_endpoints_delay_no_other_push_and_not_the_api(
    pushing: mqlite.EmbeddedClient, receiver: Receiver, servers: list[RawServer]
) -> None:
    flood = Flood()
    hostile: dict[str, Callable[[socket.socket], None]] = {
        "never": never_answers,
        "trickle": one_byte_a_second,
        "flood": flood,
        "reset": resets,
    }
    for name, handler in hostile.items():
        server = RawServer(handler)
        servers.append(server)
        pushing.create_queue(name, SLOW_RETRY)
        pushing.create_push(name, server.url(), max_in_flight=8, timeout_ms=10_000)
        pushing.send(name, [OutMessage(b"x") for _ in range(8)])
    time.sleep(0.3)  # every hostile slot is taken
    pushing.create_queue("good")
    pushing.create_push("good", receiver.url())
    started = time.monotonic()
    pushing.send("good", [OutMessage(str(i).encode()) for i in range(50)])
    slowest_api = 0.0
    while len(receiver.got) < 50:
        t = time.monotonic()
        pushing.stats("good")
        pushing.send_one("never", OutMessage(b"more"))
        slowest_api = max(slowest_api, time.monotonic() - t)
        assert time.monotonic() - started < 8, f"good target got {len(receiver.got)} of 50"
        time.sleep(0.01)
    # All 50 delivered while the silent endpoints' POSTs still wait for their deadline.
    assert [m.state for m in pushing.peek("never")][:8] == ["locked"] * 8
    assert [m.state for m in pushing.peek("trickle")][:8] == ["locked"] * 8
    assert slowest_api < 1.0, slowest_api
    # Every hostile message is settled by its deadline (10 s) or its 64 KiB read.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        errors = {
            n: [m.last_error for m in pushing.peek(n)][:8] for n in ("never", "trickle", "reset")
        }
        if all(len(e) == 8 and all(e) for e in errors.values()) and not pushing.peek("flood"):
            break
        time.sleep(0.05)
    assert errors["never"] == ["push: timeout after 10 s"] * 8
    assert errors["trickle"] == ["push: timeout after 10 s"] * 8
    assert all(e.startswith("push: ") for e in errors["reset"]), errors["reset"]
    assert pushing.stats("flood").total == 0  # 200 read to 64 KiB: delivered
    assert flood.sent < 64 * 1024**2, flood.sent  # the 2 GB answer was dropped early

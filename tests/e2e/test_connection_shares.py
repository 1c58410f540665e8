"""Each credential's share of the connection cap, against a REAL ``mqlite serve`` (issue
26): one listen key parking long polls on every connection it can open, or slow bodies
to ``/healthz``, no longer lock everybody else out, and a reserve of the cap stays for
the administrator tokens and ``/healthz`` (docs/http.md "Connection shares").

With ``MQLITE_MAX_CONNECTIONS=40``: a credential holds at most 10 requests in flight
(25 %), 4 of them long polls (10 %); the last 2 slots (5 %, at least 2) are reserved.
Raw sockets, so 45 requests cost no thread each on a loaded host.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import httpx
from e2e_support import RPC, Broker, BrokerFactory, b64

CAP = 40
REQUEST_SHARE, PARKED_SHARE, RESERVE = 10, 4, 2
POLL_WAIT_MS = 10_000  # longer than each test's setup takes on a loaded host


def request(b: Broker, token: str, method: str, body: dict[str, Any]) -> socket.socket:
    """Send one RPC on a fresh connection (raw, so 45 of them cost no thread each); its
    answer is read by ``status``."""
    data = json.dumps(body).encode()
    s = socket.create_connection((b.host, b.port), timeout=POLL_WAIT_MS / 1000 + 30)
    s.sendall(
        f"POST {RPC}{method} HTTP/1.1\r\nHost: 127.0.0.1:{b.port}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )
    return s


def status(s: socket.socket) -> int:
    """The status of the answer on ``s`` (then closed)."""
    with s:
        head = b""
        while b"\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                raise AssertionError(f"closed without an answer: {head!r}")
            head += chunk
        return int(head.split(b" ", 2)[1])


def send_body(queue: str, i: int = 0) -> dict[str, Any]:
    return {"queue": queue, "messages": [{"body": b64(f"m{i}")}]}


def polls(b: Broker, tokens: list[str], queue: str) -> list[socket.socket]:
    """A long poll on an empty queue per token, each on its own connection."""
    body = {"queue": queue, "wait_time_ms": POLL_WAIT_MS}
    return [request(b, t, "QueueService/Receive", body) for t in tokens]


def sends(b: Broker, token: str, queue: str, n: int) -> list[int]:
    """``n`` Sends at once, each on a fresh connection: their statuses."""
    pending = [request(b, token, "QueueService/Send", send_body(queue, i)) for i in range(n)]
    return [status(s) for s in pending]


def healthz(b: Broker) -> int:
    return httpx.get(b.base_url + "/healthz", timeout=5).status_code


def test_one_listen_key_parking_polls_leaves_room_for_every_other_credential(
    broker_factory: BrokerFactory,
) -> None:
    b = broker_factory({"MQLITE_MAX_CONNECTIONS": str(CAP)})
    polled, target = b.create_queue(), b.create_queue()
    _, listener = b.create_key(["listen"])
    senders = [b.create_key(["send"])[1] for _ in range(4)]  # 5 Sends each: in their share
    b.close_clients()
    parked = polls(b, [listener] * 45, polled)
    time.sleep(1.0)  # the polls are in: parked, or refused over their share
    pending = [
        request(b, senders[i % 4], "QueueService/Send", send_body(target, i)) for i in range(20)
    ]
    assert [status(s) for s in pending] == [200] * 20
    assert status(request(b, str(b.token), "QueueService/Send", send_body(target))) == 200
    assert healthz(b) == 200
    statuses = [status(s) for s in parked]
    assert statuses.count(200) == PARKED_SHARE, statuses  # the parked share, waited out
    assert statuses.count(503) == 45 - PARKED_SHARE, statuses


def test_the_share_refusal_names_the_limit(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_MAX_CONNECTIONS": str(CAP)})
    q = b.create_queue()
    _, listener = b.create_key(["listen"])
    b.close_clients()
    parked = polls(b, [listener] * PARKED_SHARE, q)
    time.sleep(1.0)
    with httpx.Client(base_url=b.base_url, timeout=30) as c:
        headers = {"Authorization": f"Bearer {listener}"}
        r = c.post(
            RPC + "QueueService/Receive", json={"queue": q, "wait_time_ms": 1000}, headers=headers
        )
        assert r.status_code == 503 and r.json()["code"] == "unavailable"
        assert (
            f"long polls waiting, its share of the connection cap (10% = {PARKED_SHARE})"
            in (r.json()["message"])
        )
        # A Receive without a wait is not a long poll: it still gets in.
        r = c.post(RPC + "QueueService/Receive", json={"queue": q}, headers=headers)
        assert r.status_code == 200
    assert [status(s) for s in parked] == [200] * PARKED_SHARE


def test_the_reserve_keeps_the_last_slots_for_admin_tokens_and_healthz(
    broker_factory: BrokerFactory,
) -> None:
    """Ten listen keys park four polls each: 38 connections busy (the cap minus the
    reserve); another key's Send is refused, the administrator's and /healthz get in."""
    b = broker_factory({"MQLITE_MAX_CONNECTIONS": str(CAP)})
    q, target = b.create_queue(), b.create_queue()
    listeners = [b.create_key(["listen"])[1] for _ in range(10)]
    _, sender = b.create_key(["send"])
    b.close_clients()
    parked = polls(b, [t for t in listeners for _ in range(PARKED_SHARE)], q)
    time.sleep(1.5)
    assert status(request(b, sender, "QueueService/Send", send_body(target))) == 503
    assert status(request(b, str(b.token), "QueueService/Send", send_body(target))) == 200
    assert healthz(b) == 200
    statuses = [status(s) for s in parked]
    assert statuses.count(200) == CAP - RESERVE, statuses
    assert statuses.count(503) == 10 * PARKED_SHARE - (CAP - RESERVE), statuses


def _slow_healthz_body(b: Broker, stop: threading.Event, closed_after: list[float]) -> None:
    """POST /healthz declaring a 100 kB body sent a byte every 0.2 s; reconnect when the
    broker closes it (how long it stayed open after its answer goes to closed_after)."""
    head = (
        f"POST /healthz HTTP/1.1\r\nHost: 127.0.0.1:{b.port}\r\nContent-Length: 100000\r\n\r\n"
    ).encode()
    while not stop.is_set():
        with socket.create_connection((b.host, b.port), timeout=5) as s:
            s.sendall(head + b"x")
            answered = time.monotonic()
            try:
                while not stop.is_set():
                    s.sendall(b"x")
                    time.sleep(0.2)
            except OSError:
                closed_after.append(time.monotonic() - answered)
        time.sleep(0.05)


def test_slow_bodies_to_healthz_hold_no_slot(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_MAX_CONNECTIONS": str(CAP)})
    q = b.create_queue()
    _, sender = b.create_key(["send"])
    b.close_clients()
    stop, closed_after = threading.Event(), list[float]()
    attackers = [
        threading.Thread(target=_slow_healthz_body, args=(b, stop, closed_after))
        for _ in range(CAP + 20)
    ]
    for t in attackers:
        t.start()
    try:
        time.sleep(1.0)
        got: list[int] = []
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            got += sends(b, sender, q, 5)
    finally:
        stop.set()
        for t in attackers:
            t.join(15)
    assert got and got.count(200) == len(got), got
    # Each slow body was closed about ANSWERED_BODY_LINGER_S after its answer.
    assert closed_after and max(closed_after) < 3.0, closed_after

"""Hostile clients against a REAL ``mqlite serve`` (issue 12, the HTTP items): the worker
keeps serving everyone else, and every refusal is the JSON envelope.

Figures before the fix (tests/bench/hostile_bench.py): a 128 MB header was read whole
(200 after 23 s, /healthz stalled 4.4 s); 1,100 idle sockets under a 1024 fd limit locked
every client out for as long as they stayed; eight 28 MB Sends of 2M properties took
24.8 s with a 6 s stall and left the worker at 3 GB; a Peek of 1,000 messages with 64 KiB
of metadata answered 64 MB against the 32 MiB budget; a 30 MB queue name made a 31 MB
log line; text/plain, a foreign Host and a cross-site Origin all reached RPCs with auth
off; /metrics and uvicorn answered plain text; an abandoned paced Redrive kept moving.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_support import RPC, Broker, BrokerFactory, assert_error, b64, scaled, slowdown

from mqlite import defaults

HEAD_DEADLINE_S = defaults.HEAD_TIMEOUT_S + 3  # the deadline plus slack for a busy host


def worker_pid(b: Broker) -> int:
    path = Path(f"/proc/{b.proc.pid}/task/{b.proc.pid}/children")
    kids = path.read_text().split()
    return int(kids[0])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def raw_exchange(b: Broker, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data`` on a fresh socket and read until the broker closes it."""
    with socket.create_connection((b.host, b.port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := s.recv(65536):
                out += chunk
        return out


def parse_response(raw: bytes) -> tuple[int, dict[str, str], Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, json.loads(body)


def assert_raw_envelope(raw: bytes, status: int, code: str, reason: str | None = None) -> str:
    got, headers, body = parse_response(raw)
    assert got == status, raw[:300]
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert body["code"] == code and body.get("reason") == reason, body
    return str(body["message"])


class Probe:
    """GET /healthz in a loop on its own connection; ``worst`` latency in seconds."""

    def __init__(self, b: Broker) -> None:
        self.url, self.worst, self.failures = b.base_url, 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=30) as c:
            while not self._stop.is_set():
                started = time.perf_counter()
                try:
                    assert c.get(self.url + "/healthz").status_code == 200
                except httpx.TransportError:
                    self.failures += 1
                self.worst = max(self.worst, time.perf_counter() - started)
                time.sleep(0.02)

    def __enter__(self) -> Probe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(35)


# -- 1. the request head: size and deadline -------------------------------------------------


@pytest.mark.same_on_any_store
def test_a_streamed_128_mb_header_is_refused_431_and_stalls_nobody(broker: Broker) -> None:
    pid = worker_pid(broker)
    sent = 0
    with Probe(broker) as probe, socket.create_connection((broker.host, broker.port)) as s:
        s.settimeout(20)
        chunk = b"a" * 65536
        with contextlib.suppress(OSError):  # the broker closes after answering 431
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Bomb: ")
            while sent < 128 << 20:
                s.sendall(chunk)
                sent += len(chunk)
        answer = b""
        with contextlib.suppress(OSError):
            while part := s.recv(65536):
                answer += part
    # Only what the kernel buffers took was sent: the worker read 16 KiB and refused.
    assert sent < 16 << 20, sent
    message = assert_raw_envelope(answer, 431, "invalid_argument", "headers_too_large")
    assert "16384" in message
    # Was a 4.4 s stall on an idle machine; a loaded one stretches the bound.
    limit = 1.0 * slowdown()
    assert probe.worst < limit and probe.failures == 0, (probe.worst, probe.failures, limit)
    assert worker_pid(broker) == pid  # the worker was not killed


@pytest.mark.same_on_any_store
def test_a_long_request_line_or_many_headers_are_431(broker: Broker) -> None:
    line = b"POST " + RPC.encode() + b"x" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    assert_raw_envelope(raw_exchange(broker, line), 431, "invalid_argument", "headers_too_large")
    many = b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 3000 + b"\r\n"
    assert_raw_envelope(raw_exchange(broker, many), 431, "invalid_argument", "headers_too_large")
    # A head just under the limit is served.
    fits = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: "
    assert raw_exchange(broker, fits + b"p" * 15_000 + b"\r\n\r\n").startswith(b"HTTP/1.1 200")


@pytest.mark.same_on_any_store
def test_malformed_http_is_the_json_envelope(broker: Broker) -> None:
    for bad in (
        b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n",
        b"NOT-A-METHOD\x01 / HTTP/1.1\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ):
        message = assert_raw_envelope(raw_exchange(broker, bad), 400, "invalid_argument")
        assert message.startswith("invalid HTTP request"), message


@pytest.mark.same_on_any_store
def test_connections_that_send_nothing_are_closed(broker: Broker) -> None:
    started = time.monotonic()
    with socket.create_connection((broker.host, broker.port), timeout=HEAD_DEADLINE_S + 5) as s:
        assert s.recv(100) == b""  # closed, no answer: nothing was asked
    assert time.monotonic() - started < HEAD_DEADLINE_S


@pytest.mark.same_on_any_store
def test_a_half_sent_head_is_408_at_the_deadline(broker: Broker) -> None:
    started = time.monotonic()
    with socket.create_connection((broker.host, broker.port), timeout=HEAD_DEADLINE_S + 5) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        for _ in range(3):  # slowloris: a byte now and then does not extend the deadline
            time.sleep(1)
            s.sendall(b"X")
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while part := s.recv(4096):
                answer += part
    assert time.monotonic() - started < HEAD_DEADLINE_S
    assert_raw_envelope(answer, 408, "canceled", "request_timeout")


@pytest.mark.same_on_any_store
def test_an_idle_keep_alive_connection_is_closed(broker: Broker) -> None:
    with socket.create_connection((broker.host, broker.port), timeout=HEAD_DEADLINE_S + 5) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while not answer.endswith(b"\r\n\r\nok"):  # head and body may come apart
            part = s.recv(4096)
            assert part, answer
            answer += part
        assert answer.startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        assert s.recv(100) == b""
    assert time.monotonic() - started < HEAD_DEADLINE_S


# -- 2. connections: the cap and the descriptor limit ---------------------------------------


def _idle_sockets(b: Broker, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            s.connect((b.host, b.port))
        socks.append(s)
    return socks


def _closed_by_peer(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.same_on_any_store
def test_1100_idle_sockets_under_a_1024_fd_limit_lock_nobody_out(
    broker_factory: BrokerFactory,
) -> None:
    b = broker_factory(nofile=1024)
    socks = _idle_sockets(b, 1100)
    try:
        time.sleep(0.5)
        started = time.monotonic()
        r = httpx.get(b.base_url + "/healthz", timeout=5)
        assert r.status_code == 200 and time.monotonic() - started < scaled(2.0)
        b.ok("AdminService/ListQueues")
        # Every idle socket is closed by the broker (evicted or at the head deadline).
        deadline = time.monotonic() + HEAD_DEADLINE_S + 2
        while time.monotonic() < deadline and not all(map(_closed_by_peer, socks)):
            time.sleep(0.25)
        assert sum(map(_closed_by_peer, socks)) == len(socks)
    finally:
        for s in socks:
            s.close()
    assert "connection cap lowered to the descriptor limit" in b.stderr()


def test_over_the_cap_with_every_connection_busy_is_503(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_MAX_CONNECTIONS": "3"})
    q = b.create_queue()
    b.close_clients()  # the factory's keep-alive client would hold a slot
    polls: list[int] = []

    def long_poll() -> None:
        with httpx.Client(base_url=b.base_url, timeout=30) as c:
            r = c.post(
                RPC + "QueueService/Receive",
                json={"queue": q, "wait_time_ms": 4000},
                headers={"Authorization": f"Bearer {b.token}"},
            )
            polls.append(r.status_code)

    threads = [threading.Thread(target=long_poll) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(1)  # the three polls are parked: every slot is busy, none is idle
    r = httpx.get(b.base_url + "/healthz", timeout=5)
    assert_error(r, 503, "unavailable")
    assert r.headers["connection"] == "close"
    for t in threads:
        t.join(15)
    assert polls == [200, 200, 200]
    assert httpx.get(b.base_url + "/healthz", timeout=5).status_code == 200


# -- 3. large legal (and illegal) bodies ------------------------------------------------------


def _concurrent_sends(b: Broker, body: bytes, n: int = 8) -> tuple[list[Any], float, float]:
    """``n`` Sends of ``body`` at once; (statuses, seconds, the worker's peak RSS MB)."""
    statuses: list[Any] = []
    pid = worker_pid(b)

    def send() -> None:
        try:
            r = httpx.post(
                b.base_url + RPC + "QueueService/Send",
                content=body,
                headers={"Authorization": f"Bearer {b.token}", "Content-Type": "application/json"},
                timeout=120,
            )
            statuses.append(r.status_code)
        except httpx.TransportError as exc:  # pragma: no cover - the failure itself
            statuses.append(repr(exc))

    threads = [threading.Thread(target=send) for _ in range(n)]
    started, peak = time.monotonic(), rss_mb(pid)
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads) and time.monotonic() - started < 150:
        peak = max(peak, rss_mb(pid))
        time.sleep(0.05)
    for t in threads:
        t.join(5)
    return statuses, time.monotonic() - started, peak


def _settled_rss(pid: int, below: float) -> float:
    deadline, rss = time.monotonic() + 10, rss_mb(pid)
    while rss >= below and time.monotonic() < deadline:
        time.sleep(0.2)
        rss = rss_mb(pid)
    return rss


@pytest.mark.same_on_any_store
def test_eight_sends_of_two_million_properties_are_refused_fast(
    broker_factory: BrokerFactory,
) -> None:
    b = broker_factory()
    q = b.create_queue()
    props = ",".join(f'"{i:07d}":"x"' for i in range(2_000_000))
    body = '{"queue":"' + q + '","messages":[{"body":"aGk=","properties":{' + props + "}}]}"
    pid, idle = worker_pid(b), rss_mb(worker_pid(b))
    with Probe(b) as probe:
        statuses, seconds, peak = _concurrent_sends(b, body.encode())
    assert statuses == [400] * 8
    # Was 24.8 s with a 6 s stall on an idle machine; a loaded one stretches both bounds.
    factor = slowdown()
    assert seconds < 15 * factor and probe.worst < 1.5 * factor, (seconds, probe.worst, factor)
    assert peak < idle + 400, (idle, peak)  # was 3 GB, and stayed there
    assert _settled_rss(pid, idle + 64) < idle + 64
    r = b.rpc("QueueService/Send", content=body.encode())
    assert "over the limit of 262144" in assert_error(r, 400, "invalid_argument")


def test_eight_concurrent_29_mb_sends_are_answered_with_flat_memory(
    broker_factory: BrokerFactory,
) -> None:
    b = broker_factory()
    q = b.create_queue()
    one = base64.b64encode(os.urandom(1 << 20)).decode()
    body = '{"queue":"' + q + '","messages":[' + ",".join(['{"body":"' + one + '"}'] * 21)
    body += "]}"
    assert len(body) > 29_000_000
    pid, idle = worker_pid(b), rss_mb(worker_pid(b))
    statuses, _, peak = _concurrent_sends(b, body.encode())
    # Each is answered: 200, or 503 when it waited INFLIGHT_WAIT_S (30 s) for the budget --
    # what a loaded machine (load 16) gives the last ones, by design (issue 25: no test
    # depends on speed). Two always fit the budget at once; every 200 stored all 21.
    assert set(statuses) <= {200, 503} and statuses.count(200) >= 2, statuses
    # Two at a time fit the 64 MiB in-flight budget (was 329 MB peak, 219 MB kept).
    assert peak < idle + 260, (idle, peak)
    assert _settled_rss(pid, idle + 64) < idle + 64
    assert b.ok("QueueService/Stats", {"queue": q})["active"] == statuses.count(200) * 21
    assert worker_pid(b) == pid


# -- 4. the response budget -----------------------------------------------------------------


def test_a_peek_of_maximal_metadata_stays_within_the_response_budget(broker: Broker) -> None:
    q = broker.create_queue()
    # The largest legal metadata: 16 properties of 4,000 bytes (64 KiB per message).
    msg = {"properties": {f"k{i:02d}": "v" * 4000 for i in range(16)}}
    for _ in range(4):
        broker.ok("QueueService/Send", {"queue": q, "messages": [msg] * 250})
    r = broker.rpc("QueueService/Peek", {"queue": q, "max": 1000})
    assert r.status_code == 200
    got = r.json()["messages"]
    one = len(json.dumps(got[0]))
    # was 1,000 messages in 64 MB: now the page ends after the message crossing the budget
    assert 0 < len(got) < 1000
    assert len(r.content) <= defaults.RESPONSE_BYTE_BUDGET + one
    nxt = broker.ok("QueueService/Peek", {"queue": q, "from_seq": got[-1]["seq_number"] + 1})
    assert nxt["messages"][0]["seq_number"] > got[-1]["seq_number"]


def test_a_receive_of_large_bodies_counts_them_as_base64(broker_factory: BrokerFactory) -> None:
    b = broker_factory()
    q = b.create_queue()
    body = b64(os.urandom(1 << 20))
    for _ in range(3):
        b.ok("QueueService/Send", {"queue": q, "messages": [{"body": body}] * 16})
    r = b.rpc("QueueService/Receive", {"queue": q, "max_messages": 256})
    assert r.status_code == 200, r.text[:500]
    got = r.json()["messages"]
    # 32 raw MiB of bodies were 42.7 MiB of base64 before: now at most the budget + one.
    assert 0 < len(got) < 32
    assert len(r.content) <= defaults.RESPONSE_BYTE_BUDGET + len(json.dumps(got[0]))


# -- 5. the access log -----------------------------------------------------------------------


@pytest.mark.same_on_any_store
def test_a_30_mb_queue_name_makes_a_short_log_line(broker_factory: BrokerFactory) -> None:
    b = broker_factory()
    name = "q" * (30 << 20)
    r = b.rpc("QueueService/Stats", content=json.dumps({"queue": name}).encode())
    assert r.status_code == 400
    b.rpc("QueueService/Stats", content=b'{"queue":"' + b"z" * 5000 + b'"}')
    assert b.stop() == 0
    lines = b.stderr_path.read_bytes().splitlines()
    assert max(map(len, lines)) < 4096  # was 31,457,534 bytes
    clipped = [json.loads(x) for x in lines if b'"QueueService/Stats"' in x and b"zzzz" in x]
    assert clipped and clipped[0]["queue"].endswith("...(+4744 chars)")


# -- 6. auth off: content type, Host and Origin ----------------------------------------------


@pytest.fixture
def open_broker(broker_factory: BrokerFactory) -> Iterator[Broker]:
    yield broker_factory({"MQLITE_TOKENS": "off"}, token=None)


def _list(b: Broker, **headers: str) -> httpx.Response:
    return httpx.post(b.base_url + RPC + "AdminService/ListQueues", json={}, headers=headers)


@pytest.mark.same_on_any_store
def test_auth_off_refuses_a_simple_cors_request(open_broker: Broker) -> None:
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        r = httpx.post(
            open_broker.base_url + RPC + "QueueService/Send",
            content=b'{"queue":"q","messages":[]}',
            headers={"Content-Type": ctype},
        )
        assert_error(r, 415, "invalid_argument", reason="unsupported_media_type")


@pytest.mark.same_on_any_store
def test_auth_off_serves_loopback_hosts_only(open_broker: Broker) -> None:
    port = open_broker.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}"):
        assert _list(open_broker, Host=host).status_code == 200, host
    for host in (f"evil.example:{port}", "attacker.test", f"10.0.0.5:{port}", "127.0.0.1.evil"):
        message = assert_error(_list(open_broker, Host=host), 403, "permission_denied")
        assert "loopback Host" in message


@pytest.mark.same_on_any_store
def test_auth_off_refuses_cross_site_origins(open_broker: Broker) -> None:
    port = open_broker.port
    for origin in (f"http://127.0.0.1:{port}", "http://localhost:3000", "http://[::1]:8080"):
        assert _list(open_broker, Origin=origin).status_code == 200, origin
    for origin in ("https://evil.example", "null", f"http://evil.example:{port}"):
        message = assert_error(_list(open_broker, Origin=origin), 403, "permission_denied")
        assert "cross-site" in message


@pytest.mark.same_on_any_store
def test_insecure_allow_remote_serves_any_host_but_no_cross_site_origin(
    broker_factory: BrokerFactory,
) -> None:
    b = broker_factory({"MQLITE_TOKENS": "off"}, ["--insecure-allow-remote"], token=None)
    assert _list(b, Host="broker.lan:6754").status_code == 200
    assert _list(b, Host="broker.lan:6754", Origin="http://broker.lan:6754").status_code == 200
    r = _list(b, Host="broker.lan:6754", Origin="https://evil.example")
    assert_error(r, 403, "permission_denied")


@pytest.mark.same_on_any_store
def test_auth_on_also_requires_json_and_checks_no_host(broker: Broker) -> None:
    r = broker.http.post(RPC + "AdminService/ListQueues", content=b"{}")
    assert_error(r, 415, "invalid_argument", reason="unsupported_media_type")
    r = broker.http.post(RPC + "AdminService/ListQueues", json={}, headers={"Host": "mq.example"})
    assert r.status_code == 200  # behind a proxy any name is fine: the token decides


# -- 8. envelopes everywhere -------------------------------------------------------------------


@pytest.mark.same_on_any_store
def test_metrics_errors_are_the_envelope(broker_factory: BrokerFactory) -> None:
    b = broker_factory(args=["--metrics"])
    assert_error(httpx.get(b.base_url + "/metrics"), 401, "unauthenticated")
    _, token = b.create_key(["send"])
    r = httpx.get(b.base_url + "/metrics", headers={"Authorization": f"Bearer {token}"})
    assert_error(r, 403, "permission_denied")


# -- 9. an abandoned paced Redrive stops -------------------------------------------------------


def test_a_paced_redrive_stops_when_its_client_disconnects(broker_factory: BrokerFactory) -> None:
    b = broker_factory()
    # 200 one-by-one rejects took over the default 30 s lock at load 16 (lock_lost): the
    # locks must outlast the setup on any machine, not the subject here (issue 25).
    q = b.create_queue(lock_duration_ms=600_000)
    b.send(q, *["x"] * 200)
    for m in b.receive(q, 200):
        b.ok(
            "QueueService/Reject",
            {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
        )

    def dead() -> int:
        return int(b.ok("QueueService/Stats", {"queue": q})["dead_lettered"])

    assert dead() == 200
    with pytest.raises(httpx.TimeoutException):  # 20/s would take 10 s: leave after 1 s
        httpx.post(
            b.base_url + RPC + "AdminService/Redrive",
            json={"queue": q, "rate_per_sec": 20},
            headers={"Authorization": f"Bearer {b.token}"},
            timeout=1.0,
        )
    time.sleep(0.5)
    at_disconnect = dead()
    assert 100 < at_disconnect < 200
    time.sleep(2)
    assert dead() == at_disconnect  # was: 60 more moved after the client left
    assert b.stop() == 0
    lines = [json.loads(x) for x in b.stderr().splitlines() if '"AdminService/Redrive"' in x]
    assert [(x["status"], x["code"]) for x in lines if x.get("logger") == "mqlite.access"] == [
        (499, "canceled")
    ]

"""The push client (push/transport.py) against raw sockets: a slot's connection is kept
alive across its POSTs; an answer whose end is uncertain is not read and its connection
not reused; a malformed answer is a retry naming it; TLS verifies the certificate for the
URL's host name (a self-signed one is refused; one the client trusts is used, with SNI)."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from push_support import RawServer

import mqlite
from mqlite import OutMessage, QueueConfig
from mqlite.push import dispatcher

SLOW_RETRY = QueueConfig(retry_initial_delay_ms=3_600_000, retry_max_delay_ms=3_600_000)


def wait_until(pred: Callable[[], object], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


def read_request(conn: socket.socket, buf: bytearray) -> bool:
    """One request (head + content-length body) off ``conn``; False at its end."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(rest) < length:
        rest += conn.recv(65536)
    buf[:] = rest[length:]
    return True


def answering(answer: bytes, then: Callable[[], None] = lambda: None) -> Callable[..., None]:
    def handle(conn: socket.socket) -> None:
        buf = bytearray()
        while read_request(conn, buf):
            conn.sendall(answer)
            then()

    return handle


@pytest.fixture
def servers() -> Iterator[list[RawServer]]:
    made: list[RawServer] = []
    yield made
    for s in made:
        s.close()


def test_a_slots_connection_is_kept_alive_across_its_posts(
    pushing: mqlite.EmbeddedClient, servers: list[RawServer]
) -> None:
    server = RawServer(answering(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"))
    servers.append(server)
    pushing.create_queue("q")
    pushing.create_push("q", server.url(), max_in_flight=1)
    pushing.send("q", [OutMessage(b"x")] * 5)
    wait_until(lambda: pushing.list_pushes()[0].delivered == 5)
    assert server.accepted == 1


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",  # no chunk ever comes
        b"HTTP/1.1 200 OK\r\n\r\n",  # ends when the connection does (it never does)
        b"HTTP/1.1 200 OK\r\ncontent-length: 70000\r\n\r\n",  # over 64 KiB
        b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n",
        b"HTTP/1.0 204 No Content\r\n\r\n",
    ],
)
def test_an_answer_of_uncertain_end_is_not_read_and_its_connection_not_reused(
    pushing: mqlite.EmbeddedClient, servers: list[RawServer], answer: bytes
) -> None:
    server = RawServer(answering(answer, then=lambda: time.sleep(30)))
    servers.append(server)
    pushing.create_queue("q", SLOW_RETRY)
    pushing.create_push("q", server.url(), max_in_flight=1, timeout_ms=5_000)
    pushing.send("q", [OutMessage(b"x")] * 3)
    # Delivered on the status alone, well inside the 5 s deadline, each on a new connection.
    wait_until(lambda: pushing.list_pushes()[0].delivered == 3, timeout_s=4)
    assert server.accepted == 3 and pushing.list_pushes()[0].failed == 0


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"SMTP ready\r\n\r\n", "push: invalid answer: not an HTTP/1.x status line"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "push: invalid answer: malformed header"),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
            "push: invalid answer: conflicting content-length",
        ),
        (b"HTTP/1.1 200 OK\r\nx: " + b"y" * 70_000, "push: invalid answer: answer head over"),
        (b"", "push: ConnectionError: the server closed the connection before answering"),
    ],
)
def test_a_malformed_answer_is_a_retry_naming_it(
    pushing: mqlite.EmbeddedClient, servers: list[RawServer], answer: bytes, error: str
) -> None:
    def handle(conn: socket.socket) -> None:
        read_request(conn, bytearray())
        conn.sendall(answer)

    servers.append(server := RawServer(handle))
    pushing.create_queue("q", SLOW_RETRY)
    pushing.create_push("q", server.url())
    pushing.send_one("q", OutMessage(b"x"))
    wait_until(lambda: pushing.peek("q")[0].last_error)
    assert pushing.peek("q")[0].last_error.startswith(error), pushing.peek("q")[0].last_error


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for the name ``localhost`` (openssl, as the ops tests)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


class TlsServer(RawServer):
    """RawServer whose connections are TLS with ``cert``; records each SNI name."""

    def __init__(self, cert: Path, key: Path, handle: Callable[[socket.socket], None]) -> None:
        self.names: list[str | None] = []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.sni_callback = lambda sock, name, ctx: self.names.append(name)  # type: ignore[assignment,misc,func-returns-value]

        def tls(conn: socket.socket) -> None:
            conn.settimeout(10)
            with context.wrap_socket(conn, server_side=True) as wrapped:
                handle(wrapped)

        super().__init__(tls)

    def url(self) -> str:
        return f"https://localhost:{self.port}/hook"


def test_tls_refuses_a_certificate_it_does_not_trust(
    pushing: mqlite.EmbeddedClient, servers: list[RawServer], certificate: tuple[Path, Path]
) -> None:
    server = TlsServer(*certificate, answering(b"HTTP/1.1 204 No Content\r\n\r\n"))
    servers.append(server)
    pushing.create_queue("q", SLOW_RETRY)
    pushing.create_push("q", server.url())
    pushing.send_one("q", OutMessage(b"x"))
    wait_until(lambda: pushing.peek("q")[0].last_error)
    err = pushing.peek("q")[0].last_error
    assert err.startswith("push: connection failed") and "CERTIFICATE_VERIFY_FAILED" in err, err


def test_tls_delivers_to_a_trusted_certificate_sending_the_urls_host_as_sni(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    servers: list[RawServer],
    certificate: tuple[Path, Path],
) -> None:
    cert, _ = certificate
    monkeypatch.setattr(
        dispatcher, "ssl_context", lambda: ssl.create_default_context(cafile=str(cert))
    )
    done = threading.Event()
    server = TlsServer(*certificate, answering(b"HTTP/1.1 204 No Content\r\n\r\n", done.set))
    servers.append(server)
    mq = mqlite.open_embedded(f"file:{tmp_path / 'mq.db'}", push_allow_networks="127.0.0.0/8")
    try:
        mq.create_queue("q")
        mq.create_push("q", server.url())
        mq.send_one("q", OutMessage(b"x"))
        assert done.wait(10)
        wait_until(lambda: mq.list_pushes()[0].delivered == 1)
        assert server.names == ["localhost"]
    finally:
        mq.close()

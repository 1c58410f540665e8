"""The replication lag probe against a real unix socket answering what Litestream 0.5.17's
control socket answers to ``GET /list`` (captured from the real binary)."""

from __future__ import annotations

import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqlite.clock import FakeClock
from mqlite.server.replication import ReplicationProbe, parse_last_sync_ms

LIST = (
    b'{"databases":[{"path":"/data/mq.db","status":"replicating",'
    b'"last_sync_at":"2026-12-01T12:34:17.370690925Z"}]}\n'
)
SYNC_MS = 1796128457370  # 2026-12-01T12:34:17.370Z


@pytest.fixture
def litestream_socket() -> Iterator[tuple[str, list[bytes]]]:
    """A socket answering each connection with the next canned HTTP response."""
    answers: list[bytes] = []
    path = str(Path(tempfile.mkdtemp(dir="/tmp")) / "ls.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                body = answers.pop(0) if answers else b""
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body)

    threading.Thread(target=serve, daemon=True).start()
    yield path, answers
    srv.close()


def test_last_sync_at_with_nanoseconds_is_parsed_to_ms() -> None:
    assert parse_last_sync_ms(LIST, "/data/mq.db") == SYNC_MS
    assert parse_last_sync_ms(b'{"databases":[{"path":"/data/mq.db"}]}', "/data/mq.db") is None
    with pytest.raises(ValueError):
        parse_last_sync_ms(LIST, "/other.db")


def test_the_lag_is_the_age_of_the_last_successful_sync(
    litestream_socket: tuple[str, list[bytes]],
) -> None:
    path, answers = litestream_socket
    clock = FakeClock(start_ms=SYNC_MS + 2_500)
    probe = ReplicationProbe(path, "/data/mq.db", clock.now_ms)
    answers.append(LIST)
    rep = probe.snapshot()
    assert (rep.state, rep.last_sync_at_ms, rep.lag_seconds) == ("available", SYNC_MS, 2.5)
    clock.advance(30_000)  # S3 away: last_sync_at stays, the lag grows
    answers.append(LIST)
    assert probe.snapshot().lag_seconds == 32.5


def test_a_silent_or_garbled_litestream_is_unavailable_not_zero(
    litestream_socket: tuple[str, list[bytes]],
) -> None:
    path, answers = litestream_socket
    clock = FakeClock(start_ms=SYNC_MS)
    answers.append(b"not json")
    assert ReplicationProbe(path, "/data/mq.db", clock.now_ms).snapshot().state == "unavailable"
    gone = ReplicationProbe(path + ".missing", "/data/mq.db", clock.now_ms).snapshot()
    assert (gone.state, gone.lag_seconds) == ("unavailable", None)

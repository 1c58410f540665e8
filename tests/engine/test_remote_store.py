"""The remote store (issue 16) on a real libSQL server: sqld from ops/ci/install-sqld.sh,
started once per session on loopback (``sqld_server`` in tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, errors
from mqlite.clock import FakeClock
from mqlite.config import Settings
from mqlite.engine.hrana import decode_value, encode_value
from mqlite.engine.location import parse_dsn
from mqlite.engine.remote import bind, parse_remote
from sqld_harness import Sqld

T0 = 1_700_000_000_000


@pytest.fixture
def remote(remote_dsn: str) -> object:
    mq = mqlite.open_embedded(remote_dsn, clock=FakeClock(T0), background=False)
    yield mq
    mq.close()


@pytest.mark.parametrize(
    ("dsn", "masked"),
    [
        ("libsql://mydb-org.turso.io", "libsql://***.turso.io"),
        ("https://mydb-org.aws-eu.turso.io", "https://***.aws-eu.turso.io"),
        ("http://127.0.0.1:8080", "http://***:8080"),
    ],
)
def test_remote_dsn_selects_the_remote_store_with_a_masked_location(dsn: str, masked: str) -> None:
    location = parse_dsn(dsn)
    assert location.is_remote and not location.is_memory and location.path is None
    assert location.backend == "remote libSQL/Turso"
    assert location.shown == masked


@pytest.mark.parametrize(
    "dsn",
    ["libsql://user:secret@db.turso.io", "libsql://db.turso.io?authToken=abc", "wss://db.turso.io"],
)
def test_remote_dsn_with_credentials_or_websocket_is_refused(dsn: str) -> None:
    with pytest.raises(errors.InvalidArgument) as caught:
        parse_remote(dsn)
    assert "secret" not in str(caught.value) and "abc" not in str(caught.value)


def test_bind_numbers_named_slots_and_sends_only_the_values_used() -> None:
    sql, values = bind("SELECT :a, ':a', :b, :a", {"a": 2**53 + 1, "b": "x", "spare": 0})
    assert sql == "SELECT ?1, ':a', ?2, ?1"
    assert values == [2**53 + 1, "x"]
    assert bind("SELECT ?, ?", (1, True)) == ("SELECT ?1, ?2", [1, True])


def test_values_are_typed_exactly_on_the_wire() -> None:
    assert encode_value(2**63 - 1) == {"type": "integer", "value": "9223372036854775807"}
    assert encode_value(True) == {"type": "integer", "value": "1"}
    assert encode_value(b"\x00\xff") == {"type": "blob", "base64": "AP8="}
    assert decode_value({"type": "blob", "base64": "AP8"}) == b"\x00\xff"  # unpadded
    assert decode_value(encode_value(1.5)) == 1.5 and decode_value({"type": "null"}) is None


def test_wide_integers_round_trip_exactly_through_sqld(sqld_server: Sqld, remote_dsn: str) -> None:
    from mqlite.engine.remote import RemoteConnection

    conn = RemoteConnection(parse_remote(remote_dsn), "")
    try:
        value = 2**62 + 1  # the libsql client sent this as REAL (4.611686018427388e18)
        row = conn.execute("SELECT :v, typeof(:v), -:v", {"v": value}).fetchone()
        assert row == (value, "integer", -value)
    finally:
        conn.close()


def test_send_receive_complete_on_a_real_sqld(remote: object) -> None:
    mq = remote
    mq.create_queue("q", QueueConfig())  # type: ignore[attr-defined]
    seq = mq.send_one("q", OutMessage(body=b"hello", message_id="m1"))  # type: ignore[attr-defined]
    (m,) = mq.receive("q", max_messages=1)  # type: ignore[attr-defined]
    assert (m.seq_number, m.body, m.locked_until_ms) == (seq, b"hello", T0 + 30_000)
    mq.complete("q", m.seq_number, m.lock_token)  # type: ignore[attr-defined]
    assert mq.receive("q", max_messages=1) == []  # type: ignore[attr-defined]


def test_duplicate_message_id_is_deduplicated_on_the_remote_store(remote: object) -> None:
    mq = remote
    mq.create_queue("q", QueueConfig(dedup_window_ms=60_000))  # type: ignore[attr-defined]
    first = mq.send_one("q", OutMessage(body=b"a", message_id="m1"))  # type: ignore[attr-defined]
    again = mq.send_one("q", OutMessage(body=b"a", message_id="m1"))  # type: ignore[attr-defined]
    assert first == again


def test_status_reports_remote_libsql_with_the_masked_location(remote: object) -> None:
    st = remote.status()  # type: ignore[attr-defined]
    assert st.backend == "remote libSQL/Turso" and st.remote is True
    assert st.location.startswith("http://***:") and "127.0.0.1" not in st.location
    assert st.db_size_bytes == 0


@pytest.mark.parametrize("operation", ["vacuum", "backup"])
def test_local_only_operations_are_refused_naming_the_reason(
    remote: object, operation: str, tmp_path: object
) -> None:
    with pytest.raises(errors.InvalidArgument, match="local-file operation"):
        if operation == "vacuum":
            remote.vacuum()  # type: ignore[attr-defined]
        else:
            remote.backup(str(tmp_path) + "/snap.db")  # type: ignore[attr-defined]


def test_auth_token_is_read_from_the_environment_and_never_in_repr() -> None:
    s = Settings.from_env(
        {"MQLITE_DB": "libsql://db.turso.io", "MQLITE_DB_AUTH_TOKEN": "jwt-SECRET"}
    )
    assert s.db_auth_token == "jwt-SECRET"
    assert "jwt-SECRET" not in repr(s)


def test_auth_token_is_read_from_a_secret_file_and_one_source_only(tmp_path: object) -> None:
    from pathlib import Path

    from mqlite.config import ConfigError

    secret = Path(str(tmp_path)) / "db.token"
    secret.write_text("jwt-FROM-FILE\n")
    env = {"MQLITE_DB": "libsql://db.turso.io", "MQLITE_DB_AUTH_TOKEN_FILE": str(secret)}
    assert Settings.from_env(env).db_auth_token == "jwt-FROM-FILE"
    with pytest.raises(ConfigError, match="not both") as caught:
        Settings.from_env({**env, "MQLITE_DB_AUTH_TOKEN": "jwt-other"})
    assert "jwt-" not in str(caught.value)


def test_unreachable_server_fails_fast_with_a_retryable_unavailable_storage_error(
    sqld_server: Sqld,
) -> None:
    from sqld_harness import free_port

    with pytest.raises(errors.StorageError) as caught:
        mqlite.open_embedded(f"http://127.0.0.1:{free_port()}", background=False)
    assert caught.value.category == "io"
    # A retryable 503 unavailable (reason storage_unreachable), never a 500 internal.
    assert isinstance(caught.value, errors.StorageUnreachable)
    assert (caught.value.http_status, caught.value.code) == (503, "unavailable")
    assert "nothing was committed" in str(caught.value)


def test_a_lost_commit_acknowledgement_is_outcome_unknown_and_dedup_reconciles(
    sqld_server: Sqld, remote_dsn: str
) -> None:
    """The proxy (its own process) forwards the COMMIT, then closes the client's
    connection without the answer: applied, acknowledgement lost."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).with_name("cut_proxy.py")
    proxy = subprocess.Popen(
        [sys.executable, str(script), str(sqld_server.port)],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
    )
    try:
        assert proxy.stdout is not None and proxy.stdin is not None
        port = int(proxy.stdout.readline())
        mq = mqlite.open_embedded(f"http://127.0.0.1:{port}", clock=FakeClock(T0), background=False)
        try:
            mq.create_queue("q", QueueConfig(dedup_window_ms=60_000))
            proxy.stdin.write("arm\n")
            proxy.stdin.flush()
            assert proxy.stdout.readline().strip() == "armed"
            with pytest.raises(errors.OutcomeUnknown):
                mq.send_one("q", OutMessage(body=b"x", message_id="m1"))
            # Reconcile as documented: resend with the same message id (dedup).
            seq = mq.send_one("q", OutMessage(body=b"x", message_id="m1"))
            assert [m.seq_number for m in mq.peek("q", max=10)] == [seq]  # exactly once
        finally:
            mq.close()
    finally:
        proxy.kill()
        proxy.wait()
        for pipe in (proxy.stdin, proxy.stdout):
            if pipe is not None:
                pipe.close()


def test_a_stalled_server_fails_the_call_within_the_timeout_while_other_threads_run(
    sqld_server: Sqld,
) -> None:
    """The proxy runs in this process: the client waits in a socket call (GIL released),
    so while the stalled call waits -- the proxy says it holds its bytes -- this thread
    completes whole round trips to the server on a connection of its own."""
    import threading
    import time

    from mqlite.engine.remote import RemoteConnection, RemoteUnreachable
    from sqld_harness import StallProxy

    proxy = StallProxy(sqld_server.port)
    conn = RemoteConnection(parse_remote(proxy.url), "", timeout_s=0.5)
    direct = RemoteConnection(parse_remote(sqld_server.url), "")
    outcome: list[BaseException | None] = []

    def stalled_call() -> None:
        try:
            conn.execute("SELECT 1")
            outcome.append(None)
        except BaseException as exc:  # the worker hands it to the test
            outcome.append(exc)

    try:
        assert conn.execute("SELECT 41 + 1").fetchone() == (42,)
        proxy.stall()
        worker = threading.Thread(target=stalled_call, daemon=True)
        started = time.monotonic()
        worker.start()
        assert proxy.held.wait(5), "the call never reached the stalled proxy"
        # This thread runs while the call waits: the GIL is not held.
        assert [direct.execute("SELECT ?", (i,)).fetchone() for i in range(3)] == [(0,), (1,), (2,)]
        assert worker.is_alive(), "the stalled call ended before the round trips did"
        worker.join(5)
        waited = time.monotonic() - started
        assert not worker.is_alive(), "the call through a stalled server did not time out"
        assert isinstance(outcome[0], RemoteUnreachable) and "timed out" in str(outcome[0])
        assert 0.4 <= waited < 3.0, waited
    finally:
        direct.close()
        conn.close()
        proxy.close()


def test_a_commit_whose_answer_stalls_is_outcome_unknown_within_the_timeout(
    sqld_server: Sqld, remote_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The COMMIT reaches the server and applies; its answer never comes back: after the
    timeout (not a hang) the send is ``OutcomeUnknown``, and a resend with the same
    message id finds the message there, exactly once."""
    import time

    from mqlite import defaults
    from sqld_harness import StallProxy

    monkeypatch.setattr(defaults, "REMOTE_TIMEOUT_S", 0.5)
    proxy = StallProxy(sqld_server.port)
    try:
        mq = mqlite.open_embedded(proxy.url, clock=FakeClock(T0), background=False)
        try:
            mq.create_queue("q", QueueConfig(dedup_window_ms=60_000))
            proxy.stall(after=b"COMMIT")
            started = time.monotonic()
            with pytest.raises(errors.OutcomeUnknown):
                mq.send_one("q", OutMessage(body=b"x", message_id="m1"))
            assert time.monotonic() - started < 3.0
        finally:
            mq.close()
    finally:
        proxy.close()
    # The stalled broker could not release its lease at close: the next one waits it out.
    later = FakeClock(T0 + defaults.LEASE_TTL_MS)
    with mqlite.open_embedded(remote_dsn, clock=later, background=False) as again:
        assert [m.message_id for m in again.peek("q", max=10)] == ["m1"]  # it applied
        seq = again.send_one("q", OutMessage(body=b"x", message_id="m1"))
        assert [m.seq_number for m in again.peek("q", max=10)] == [seq]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (  # chunked, then the server closes: the body is joined, the connection not reused
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            b'5\r\n{"bat\r\n8;x=1\r\non":null\r\n1\r\n}\r\n0\r\n\r\n',
            (200, b'{"baton":null}', True),
        ),
        (b"HTTP/1.1 400 Bad\r\nContent-Length: 3\r\n\r\nbad", (400, b"bad", False)),
        (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 9000 + b"\r\n\r\n", ValueError),  # head line bound
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", ConnectionResetError),
        (b"SSH-2.0-OpenSSH\r\n", ValueError),  # not an HTTP server
    ],
)
def test_http_answers_are_read_exactly_and_bounded(answer: bytes, expected: object) -> None:
    """The client's HTTP/1.1 reader against raw answers from a loopback socket."""
    import socket
    import threading

    from mqlite.engine.http1 import HttpConnection

    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        peer, _ = listener.accept()
        with peer:
            peer.recv(65536)
            peer.sendall(answer)

    thread = threading.Thread(target=serve)
    thread.start()
    conn = HttpConnection("127.0.0.1", listener.getsockname()[1], False, 2.0)
    try:
        if isinstance(expected, tuple):
            status, body = conn.post(b"POST /v3/pipeline HTTP/1.1\r\nHost: x\r\n", b"{}")
            assert (status, body, conn.closed) == expected
        else:
            with pytest.raises(expected):  # type: ignore[call-overload]
                conn.post(b"POST /v3/pipeline HTTP/1.1\r\nHost: x\r\n", b"{}")
    finally:
        conn.close()
        thread.join()
        listener.close()


def test_executemany_runs_the_rows_in_order_and_stops_at_the_first_failure_like_sqlite3(
    sqld_server: Sqld, remote_dsn: str, tmp_path: object
) -> None:
    """One round trip (a Hrana batch), the semantics of ``sqlite3``'s executemany: the rows
    before the failing one stay applied inside the transaction, the later ones never run."""
    import sqlite3

    from mqlite.engine.remote import RemoteConnection

    rows = [(1,), (2,), (1,), (3,)]  # the third violates UNIQUE
    local = sqlite3.connect(str(tmp_path) + "/x.db", isolation_level=None)
    remote = RemoteConnection(parse_remote(remote_dsn), "")
    try:
        for conn in (local, remote):
            conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY AUTOINCREMENT, b UNIQUE)")
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.executemany("INSERT INTO t(b) VALUES (?)", [(10,), (11,)])
            assert (cur.rowcount, conn.execute("SELECT last_insert_rowid()").fetchone()) == (
                2,
                (2,),
            )
            with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
                conn.executemany("INSERT INTO t(b) VALUES (?)", rows)
            assert conn.in_transaction
            conn.execute("COMMIT")
            assert [r[0] for r in conn.execute("SELECT b FROM t ORDER BY id")] == [10, 11, 1, 2]
    finally:
        local.close()
        remote.close()


def test_a_peek_over_the_servers_response_limit_is_read_in_smaller_statements(
    remote: object,
) -> None:
    """sqld sends a statement's whole result at once and refuses one over 10 MiB; a page
    of twelve 1 MiB bodies (under the 32 MiB response budget) still comes back whole."""
    mq: Any = remote
    mq.create_queue("big", QueueConfig())
    bodies = [bytes([i]) * (1 << 20) for i in range(12)]
    for body in bodies:
        mq.send_one("big", OutMessage(body=body))
    page = mq.peek("big", max=100)
    assert [m.body for m in page] == bodies

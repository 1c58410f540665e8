"""The remote store (issue 16) on a real libSQL server: sqld from ops/ci/install-sqld.sh,
started once per session on loopback (``sqld_server`` in tests/conftest.py)."""

from __future__ import annotations

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, errors
from mqlite.clock import FakeClock
from mqlite.config import Settings
from mqlite.engine.remote import bind, parse_remote
from mqlite.engine.store import parse_dsn
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


def test_bind_numbers_named_slots_and_sends_wide_integers_exactly() -> None:
    sql, values = bind("SELECT :a, ':a', :b, :a", {"a": 2**53 + 1, "b": "x"})
    assert sql == "SELECT CAST(?1 AS INTEGER), ':a', ?2, CAST(?1 AS INTEGER)"
    assert values == [str(2**53 + 1), "x"]
    assert bind("SELECT ?, ?", (1, True)) == ("SELECT ?1, ?2", [1, 1])


def test_wide_integers_round_trip_exactly_through_sqld(sqld_server: Sqld, remote_dsn: str) -> None:
    from mqlite.engine.remote import RemoteConnection

    conn = RemoteConnection(parse_remote(remote_dsn), "")
    try:
        value = 2**62 + 1  # the client alone would send this as REAL (4.611686018427388e18)
        row = conn.execute("SELECT :v, typeof(:v)", {"v": value}).fetchone()
        assert row == (value, "integer")
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


def test_unreachable_server_fails_fast_with_a_storage_error(sqld_server: Sqld) -> None:
    from sqld_harness import free_port

    with pytest.raises(errors.StorageError) as caught:
        mqlite.open_embedded(f"http://127.0.0.1:{free_port()}", background=False)
    assert caught.value.category == "io"


def test_a_lost_commit_acknowledgement_is_outcome_unknown_and_dedup_reconciles(
    sqld_server: Sqld, remote_dsn: str
) -> None:
    """The proxy runs in its own process: the libsql client holds the GIL while it waits
    on the network, so a proxy thread in this process could never answer it."""
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

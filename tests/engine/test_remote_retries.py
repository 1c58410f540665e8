"""Bounded transient retries of the remote store (issue 16; only the remote store retries:
docs/architecture.md, "One writer"), on a real sqld behind a TCP proxy (``StallProxy`` in
tests/sqld_harness.py):
a request that never reached the server is sent again, whatever it carries; a lost
answer is retried only for a read or a BEGIN outside a transaction; never for a write
or a COMMIT. The retries' pause is substituted (``sleep=``), so no test sleeps on it."""

from __future__ import annotations

import select
import time
from collections.abc import Callable, Iterator

import pytest

import mqlite
from mqlite import QueueConfig, defaults
from mqlite.clock import FakeClock
from mqlite.engine.remote import RemoteConnection, RemoteUnreachable, parse_remote
from sqld_harness import Sqld, StallProxy

T0 = 1_700_000_000_000


@pytest.fixture
def proxy(sqld_server: Sqld, remote_dsn: str) -> Iterator[StallProxy]:
    relay = StallProxy(sqld_server.port)
    yield relay
    relay.close()


@pytest.fixture
def connect() -> Iterator[Callable[..., RemoteConnection]]:
    """Factory: ``connect(url, pauses, on_pause=None, timeout_s=2.0)``, a connection whose
    retry pauses are recorded in ``pauses`` (and run ``on_pause``); closed at teardown."""
    opened: list[RemoteConnection] = []

    def _connect(
        url: str,
        pauses: list[float],
        on_pause: Callable[[], None] | None = None,
        timeout_s: float = 2.0,
    ) -> RemoteConnection:
        def sleep(seconds: float) -> None:
            pauses.append(seconds)
            if on_pause is not None:
                on_pause()

        conn = RemoteConnection(parse_remote(url), "", timeout_s=timeout_s, sleep=sleep)
        opened.append(conn)
        return conn

    yield _connect
    for conn in opened:
        conn.close()


def count(remote_dsn: str) -> int:
    direct = RemoteConnection(parse_remote(remote_dsn), "")
    try:
        return int(direct.execute("SELECT count(*) FROM t").fetchone()[0])  # type: ignore[index]
    finally:
        direct.close()


def test_a_refused_connection_is_retried_for_any_statement_because_nothing_ran(
    proxy: StallProxy, remote_dsn: str, connect: Callable[..., RemoteConnection]
) -> None:
    pauses: list[float] = []
    conn = connect(proxy.url, pauses, on_pause=proxy.up)
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
    proxy.down()  # the server is away for the next connect; back during the pause
    conn.execute("INSERT INTO t(v) VALUES ('once')")
    assert conn.retries == 1 and pauses == [defaults.REMOTE_RETRY_BACKOFF_S[0]]
    assert count(remote_dsn) == 1  # applied exactly once


def test_a_transaction_survives_a_refused_connection_on_its_stream(
    proxy: StallProxy, remote_dsn: str, connect: Callable[..., RemoteConnection]
) -> None:
    """The stream (baton) lives on the server, not in the TCP connection: a COMMIT that
    never reached the server goes again on a new connection and commits the transaction."""
    pauses: list[float] = []
    conn = connect(proxy.url, pauses, on_pause=proxy.up)
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO t(v) VALUES ('in tx')")
    proxy.down()
    conn.execute("COMMIT")
    assert conn.retries == 1 and not conn.in_transaction
    assert count(remote_dsn) == 1


def test_a_lost_answer_of_a_read_is_retried(
    proxy: StallProxy, remote_dsn: str, connect: Callable[..., RemoteConnection]
) -> None:
    pauses: list[float] = []
    conn = connect(proxy.url, pauses)
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
    proxy.cut(after=b"SELECT")
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    assert conn.retries == 1


def test_a_lost_answer_of_a_write_is_never_retried(
    proxy: StallProxy, remote_dsn: str, connect: Callable[..., RemoteConnection]
) -> None:
    """The server ran it; sending it again would apply it twice."""
    pauses: list[float] = []
    conn = connect(proxy.url, pauses)
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
    proxy.cut(after=b"INSERT")
    with pytest.raises(RemoteUnreachable):
        conn.execute("INSERT INTO t(v) VALUES ('applied, answer lost')")
    assert conn.retries == 0 and pauses == []
    assert count(remote_dsn) == 1  # applied once, not twice


def test_a_lost_answer_inside_a_transaction_is_never_retried(
    proxy: StallProxy, remote_dsn: str, connect: Callable[..., RemoteConnection]
) -> None:
    pauses: list[float] = []
    conn = connect(proxy.url, pauses)
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
    conn.execute("BEGIN IMMEDIATE")
    proxy.cut(after=b"SELECT")
    with pytest.raises(RemoteUnreachable):
        conn.execute("SELECT count(*) FROM t")  # its stream is gone with the transaction
    assert conn.retries == 0 and not conn.in_transaction


def test_retries_are_bounded_by_the_backoff_table(
    sqld_server: Sqld, connect: Callable[..., RemoteConnection]
) -> None:
    from sqld_harness import free_port

    pauses: list[float] = []
    conn = connect(f"http://127.0.0.1:{free_port()}", pauses)
    with pytest.raises(RemoteUnreachable) as caught:
        conn.execute("SELECT 1")
    assert pauses == list(defaults.REMOTE_RETRY_BACKOFF_S)
    assert conn.retries == len(defaults.REMOTE_RETRY_BACKOFF_S)
    assert "***" in str(caught.value)  # the masked host, as everywhere


def test_a_stalled_read_is_not_retried_past_its_timeout(
    proxy: StallProxy, connect: Callable[..., RemoteConnection]
) -> None:
    """The first attempt used the whole timeout: no second one, so the call fails within
    about one timeout, not one per retry."""
    pauses: list[float] = []
    conn = connect(proxy.url, pauses, timeout_s=0.5)
    conn.execute("SELECT 1")
    proxy.stall()
    started = time.monotonic()
    with pytest.raises(RemoteUnreachable):
        conn.execute("SELECT 1")
    assert time.monotonic() - started < 1.5
    assert pauses == [] and conn.retries == 0


def test_a_server_that_closed_an_idle_connection_costs_no_retry_and_no_doubt(
    proxy: StallProxy, remote_dsn: str, connect: Callable[..., RemoteConnection]
) -> None:
    """A kept-alive connection the server closed is noticed before a request is put on it
    (so even a write's fate stays certain), and replaced."""
    pauses: list[float] = []
    conn = connect(proxy.url, pauses)
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
    proxy.down()
    proxy.up()  # the old connection is closed; a new one is accepted
    # The kernel delivers the proxy's FIN to the client's kept-alive socket: wait for it
    # to turn readable (EOF), the state the client must notice before it sends.
    idle = conn._client._http
    assert idle is not None
    assert select.select([idle._sock], [], [], 5)[0], "the close never reached the client"
    conn.execute("INSERT INTO t(v) VALUES ('certain')")
    assert conn.retries == 0 and pauses == []
    assert count(remote_dsn) == 1


def test_the_observation_counts_safe_retries_within_the_operation(
    proxy: StallProxy, remote_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Observe's storage figures (and so mqlite_storage_retries_total) carry the retries of
    the operation they happened in."""
    mq = mqlite.open_embedded(proxy.url, clock=FakeClock(T0), background=False)
    try:
        mq.create_queue("q", QueueConfig())
        conn = mq._engine.store.conn
        monkeypatch.setattr(conn, "_sleep", lambda _s: proxy.up())
        proxy.down()
        assert mq.stats("q").active == 0  # its BEGIN met a refused connect, then went
        ops = mq.observe().storage.operations
        retried = {(s.operation, s.outcome): s.retries for s in ops if s.retries}
        assert retried == {("transaction", "ok"): 1}
    finally:
        mq.close()


def test_after_the_retries_met_a_down_server_calls_fail_at_once_for_a_moment(
    sqld_server: Sqld,
) -> None:
    """Callers in line on the one writer must not each pay the whole backoff during an
    outage: for REMOTE_FAIL_FAST_S after a call spent its retries on refused connects,
    calls fail without retrying; then one call tries again with the whole backoff."""
    from sqld_harness import free_port

    now = [1000.0]
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        now[0] += seconds

    conn = RemoteConnection(
        parse_remote(f"http://127.0.0.1:{free_port()}"),
        "",
        timeout_s=2.0,
        sleep=sleep,
        monotonic=lambda: now[0],
    )
    try:
        backoff = list(defaults.REMOTE_RETRY_BACKOFF_S)
        with pytest.raises(RemoteUnreachable):
            conn.execute("SELECT 1")
        assert pauses == backoff
        with pytest.raises(RemoteUnreachable):
            conn.execute("SELECT 1")
        assert pauses == backoff  # failed at once
        now[0] += defaults.REMOTE_FAIL_FAST_S
        with pytest.raises(RemoteUnreachable):
            conn.execute("SELECT 1")
        assert pauses == backoff * 2  # the window is over: the whole backoff again
    finally:
        conn.close()

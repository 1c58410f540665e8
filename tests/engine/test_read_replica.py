"""Read scale-out (issue 16): with a libSQL replica (``replica=`` / MQLITE_DB_REPLICA), the
reads that tolerate staleness -- Peek, Stats, ListQueues, Observe's collection -- run on
the replica, off the one writer; claims, settlements and every write go to the primary.
A real sqld primary and a real replica following it over gRPC (``--primary-grpc-url``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, errors
from mqlite.clock import FakeClock
from mqlite.config import ConfigError, Settings
from sqld_harness import Sqld, reset_database, sqld_binary, start_replica_set
from waiting import poll_real_process

T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def replica_set(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sqld, Sqld]]:
    primary, replica = start_replica_set(sqld_binary(), tmp_path_factory.mktemp("replicas"))
    try:
        yield primary, replica
    finally:
        replica.stop()
        primary.stop()


@pytest.fixture
def open_pair(replica_set: tuple[Sqld, Sqld]) -> Iterator[Callable[..., Any]]:
    """Factory: an engine on the (emptied) primary reading from the replica."""
    primary, replica = replica_set
    if replica.proc is None:
        replica.start()  # a test before stopped it
    reset_database(primary.url)
    opened: list[Any] = []

    def _open(**options: Any) -> Any:
        mq = mqlite.open_embedded(
            primary.url, clock=FakeClock(T0), background=False, replica=replica.url, **options
        )
        opened.append(mq)
        return mq

    yield _open
    for mq in opened:
        mq.close()


def _peek_count(mq: Any, queue: str) -> int:
    try:
        return len(mq.peek(queue, max=100))
    except errors.StorageError:
        return -1


def caught_up(mq: Any, queue: str, n: int) -> None:
    """Wait until the replica (a real sqld process following the primary) serves ``n``
    messages of ``queue``."""
    poll_real_process(
        f"the replica to serve {n} messages of {queue}",
        lambda: _peek_count(mq, queue) == n,
        deadline_s=10,
        interval_s=0.005,
    )


class NotingCondition(threading.Condition):
    """The pool's condition, noting when a caller starts waiting on it (test side)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def test_peek_stats_and_list_queues_are_served_by_the_replica_off_the_writer(
    open_pair: Callable[..., Any],
) -> None:
    """They complete while another thread holds the writer (on the primary they would
    wait for it): they do not run on the writer's connection."""
    mq = open_pair()
    mq.create_queue("q", QueueConfig())
    mq.send("q", [OutMessage(body=b"%d" % i) for i in range(3)])
    caught_up(mq, "q", 3)
    held, release = threading.Event(), threading.Event()

    def hold_the_writer() -> None:
        with mq._engine.store.lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold_the_writer)
    holder.start()
    try:
        assert held.wait(5)
        results: dict[str, object] = {}

        def reads() -> None:
            results["peek"] = [m.body for m in mq.peek("q", max=10)]
            results["stats"] = mq.stats("q").active
            results["queues"] = [q.name for q in mq.list_queues()]

        reader = threading.Thread(target=reads)
        reader.start()
        reader.join(5)
        assert not reader.is_alive(), "a stale-tolerant read waited for the writer"
        assert results == {"peek": [b"0", b"1", b"2"], "stats": 3, "queues": ["q"]}
    finally:
        release.set()
        holder.join()


def test_claims_and_settlements_go_to_the_primary_and_a_down_replica_fails_only_its_reads(
    open_pair: Callable[..., Any], replica_set: tuple[Sqld, Sqld]
) -> None:
    _, replica = replica_set
    mq = open_pair()
    mq.create_queue("q", QueueConfig())
    replica.kill()
    mq.send_one("q", OutMessage(body=b"work"))
    (msg,) = mq.receive("q", max_messages=1)
    msg.complete()
    with pytest.raises(errors.StorageError) as caught:
        mq.peek("q")
    assert f":{replica.port}" in str(caught.value)  # the read names the replica it needed
    assert mq.get_queue("q").name == "q"  # the catalog is the primary's: always current


def test_observe_collects_on_the_replica_and_reports_it_unavailable_when_it_is_down(
    open_pair: Callable[..., Any], replica_set: tuple[Sqld, Sqld]
) -> None:
    _, replica = replica_set
    mq = open_pair()
    mq.create_queue("q", QueueConfig())
    mq.send_one("q", OutMessage(body=b"x"))
    caught_up(mq, "q", 1)
    seen = mq.observe()
    assert seen.collection.state == "available"
    assert [(g.queue, g.active) for g in seen.queues] == [("q", 1)]
    replica.kill()
    down = mq.observe()
    assert down.collection.state == "unavailable" and down.queues is None
    assert down.collection.error_code == "io"
    assert down.runtime.read_available  # the primary's read probe still answers


def test_the_pool_is_the_writer_plus_the_replica_connections_and_counts_waits(
    open_pair: Callable[..., Any],
) -> None:
    mq = open_pair()
    mq.create_queue("q", QueueConfig())
    # The database was just emptied and rebuilt on the primary: wait until the replica has
    # the schema too (before it, a replica read fails "no such table: messages").
    caught_up(mq, "q", 0)
    pool = mq.observe().storage.pool
    assert pool.max_open == 4  # docs/architecture.md: a remote store's pool of 4
    replica = mq._engine.replica
    replica._cond = noting = NotingCondition()  # nothing waits on it yet
    with contextlib.ExitStack() as stack:
        for _ in range(replica.size):
            stack.enter_context(replica.read())  # every replica connection lent
        busy = mq._engine.observer._pool()  # what Observe samples (its own scan would wait here)
        assert (busy.open, busy.in_use, busy.wait_count) == (4, 3, 0)
        reader = threading.Thread(target=lambda: mq.peek("q"))
        reader.start()
        assert noting.waiting.wait(5), "the reader never waited for a connection"
        assert replica.waits == 1
        assert reader.is_alive()  # waiting for a free connection
    reader.join(5)
    after = mq.observe().storage.pool
    assert after.wait_count == 1 and after.wait_duration_seconds > 0 and after.in_use == 0


def test_a_replica_started_later_catches_up_and_serves_reads(
    replica_set: tuple[Sqld, Sqld], tmp_path: Path
) -> None:
    primary, _ = replica_set
    reset_database(primary.url)
    mq = mqlite.open_embedded(primary.url, clock=FakeClock(T0), background=False)
    try:
        mq.create_queue("q", QueueConfig())
        mq.send("q", [OutMessage(body=b"early") for _ in range(20)])
    finally:
        mq.close()
    grpc = primary.extra[1]  # --grpc-listen-addr 127.0.0.1:PORT
    late = Sqld(primary.binary, tmp_path / "late", "--primary-grpc-url", f"http://{grpc}").start()
    try:
        mq = mqlite.open_embedded(
            primary.url, clock=FakeClock(T0), background=False, replica=late.url
        )
        try:
            caught_up(mq, "q", 20)
        finally:
            mq.close()
    finally:
        late.stop()


def test_a_replica_needs_a_remote_primary() -> None:
    with pytest.raises(ConfigError, match="MQLITE_DB_REPLICA"):
        Settings.from_env({"MQLITE_DB": "file:./mq.db", "MQLITE_DB_REPLICA": "http://r:8080"})
    with pytest.raises(ConfigError, match="MQLITE_DB_REPLICA"):
        Settings.from_env({"MQLITE_DB": "http://p:8080", "MQLITE_DB_REPLICA": "file:r.db"})
    settings = Settings.from_env(
        {"MQLITE_DB": "http://p:8080", "MQLITE_DB_REPLICA": "http://r:8080"}
    )
    assert settings.db_replica == "http://r:8080"


def test_an_embedded_local_database_refuses_a_replica(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidArgument, match="needs a remote"):
        mqlite.open_embedded(
            f"file:{tmp_path / 'mq.db'}", background=False, replica="http://127.0.0.1:1"
        )

"""``send_one``'s fast lane (engine/send_lane.py) against the general way, its reference.

The lane must be invisible: the same row, the same counters, the same errors as the
general path, and everything it does not take handed to the general path. Each test
records whether the general way ran (``general``: the lane's own fallback, wrapped), so a
test of "the lane took it" fails if the lane silently stopped taking anything, and a test
of "the general way took it" fails if the lane grabbed what it must not.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mqlite import OutMessage, QueueConfig, errors
from mqlite.clock import FakeClock
from mqlite.engine import Engine

START_MS = 1_700_000_000_000
BODY = b"x" * 200


class Recorder:
    """The lane's general way, counted."""

    def __init__(self, general: Callable[[str, OutMessage, int | None], int]) -> None:
        self.general = general
        self.calls = 0

    def __call__(self, queue: str, message: OutMessage, ttl_ms: int | None) -> int:
        self.calls += 1
        return self.general(queue, message, ttl_ms)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START_MS)


@pytest.fixture
def eng(tmp_path: Path, clock: FakeClock) -> Iterator[Engine]:
    e = Engine(f"file:{tmp_path / 'lane.db'}", clock=clock)
    try:
        yield e
    finally:
        e.close()


@pytest.fixture
def general(eng: Engine) -> Recorder:
    lane = eng.messaging.lane
    recorder = Recorder(lane.general)
    lane.general = recorder
    return recorder


def row(eng: Engine, seq: int) -> dict[str, Any]:
    """Every column of the message but its id (``SELECT *``: a new column is compared too)."""
    with eng.tx() as tx:
        cur = tx.execute("SELECT * FROM messages WHERE id = ?", (seq,))
        found = cur.fetchone()
        names = [d[0] for d in cur.description]
    assert found is not None, f"message {seq} not stored"
    return {k: v for k, v in zip(names, found, strict=True) if k != "id"}


def storage_transactions(eng: Engine) -> tuple[int, float]:
    stats = eng.storage_ops.stats["transaction", "ok", ""]
    return stats.count, stats.duration.count


def enqueued(eng: Engine, queue: str) -> int:
    return eng.effects.by_queue.get(queue, {}).get("enqueued", 0)


# -- the lane stores what the general way stores ----------------------------------------


@pytest.mark.parametrize("default_ttl_ms", [0, 60_000])
def test_lane_send_stores_the_row_the_general_way_stores(
    eng: Engine, general: Recorder, default_ttl_ms: int
) -> None:
    eng.create_queue("q", QueueConfig(default_ttl_ms=default_ttl_ms))
    on_lane = eng.send_one("q", OutMessage(BODY))
    assert general.calls == 0, "a plain send_one to a plain queue takes the lane"
    by_general = eng.messaging._send_one("q", OutMessage(BODY), None)
    assert by_general == on_lane + 1
    assert row(eng, on_lane) == row(eng, by_general)
    expires_at = row(eng, on_lane)["expires_at"]
    assert expires_at == (START_MS + default_ttl_ms if default_ttl_ms else 0)


def test_lane_send_is_counted_as_the_general_way_counts_it(eng: Engine, general: Recorder) -> None:
    eng.create_queue("q")
    before_tx, before_hist = storage_transactions(eng)
    eng.send_one("q", OutMessage(BODY))
    eng.send_one("q", OutMessage(BODY))
    assert general.calls == 0
    assert enqueued(eng, "q") == 2
    assert storage_transactions(eng) == (before_tx + 2, before_hist + 2)
    eng.messaging._send_one("q", OutMessage(BODY), None)
    assert enqueued(eng, "q") == 3
    assert storage_transactions(eng) == (before_tx + 3, before_hist + 3)


def test_lane_send_wakes_a_parked_receiver(eng: Engine, general: Recorder) -> None:
    """A parked long poll is a waiter on the notifier (tests/engine/test_long_poll.py
    drives the whole receive); the lane's COMMIT must fire it, one per message."""
    eng.create_queue("q")
    woken: list[str] = []
    eng.notifier.register("q", lambda: woken.append("first"))
    eng.notifier.register("q", lambda: woken.append("second"))
    eng.send_one("q", OutMessage(BODY))
    assert general.calls == 0
    assert woken == ["first"], "one message wakes one parked receive"
    assert eng.notifier.waiting("q") == 1


# -- what the lane does not take goes the general way -----------------------------------


@pytest.mark.parametrize(
    "message",
    [
        OutMessage(BODY, message_id="m-1"),
        OutMessage(BODY, group_id="g"),
        OutMessage(BODY, subject="s"),
        OutMessage(BODY, correlation_id="c"),
        OutMessage(BODY, reply_to="r"),
        OutMessage(BODY, content_type="text/plain"),
        OutMessage(BODY, properties={"k": "v"}),
        OutMessage(b"y" * 1024),  # a large body: the bodies table
        OutMessage(bytearray(BODY)),  # normalised to bytes by the general way
    ],
    ids=lambda m: next(
        (f for f in ("message_id", "group_id", "subject", "correlation_id", "reply_to",
                     "content_type", "properties") if getattr(m, f)),
        f"{type(m.body).__name__}-{len(m.body)}",
    ),
)  # fmt: skip
def test_lane_leaves_metadata_and_large_bodies_to_the_general_way(
    eng: Engine, general: Recorder, message: OutMessage
) -> None:
    eng.create_queue("q")
    seq = eng.send_one("q", message)
    assert general.calls == 1
    got = eng.receive("q")
    assert [m.seq_number for m in got] == [seq]
    assert got[0].body == bytes(message.body)


def test_lane_leaves_a_ttl_argument_to_the_general_way(eng: Engine, general: Recorder) -> None:
    eng.create_queue("q")
    seq = eng.send_one("q", OutMessage(BODY), ttl_ms=5_000)
    assert general.calls == 1
    assert row(eng, seq)["expires_at"] == START_MS + 5_000


def test_lane_leaves_dedup_group_fifo_and_topics_to_the_general_way(
    eng: Engine, general: Recorder
) -> None:
    eng.create_queue("dd", QueueConfig(dedup_window_ms=60_000))
    eng.create_queue("gf", QueueConfig(ordering_mode="group_fifo"))
    eng.subscribe("t", "s1")
    eng.subscribe("t", "s2")
    eng.send_one("dd", OutMessage(BODY))
    with pytest.raises(errors.GroupRequired):
        eng.send_one("gf", OutMessage(BODY))
    eng.send_one("t", OutMessage(BODY))
    assert general.calls == 3
    assert [len(eng.receive(q)) for q in ("s1", "s2")] == [1, 1]


def test_lane_refuses_what_the_general_way_refuses(eng: Engine, general: Recorder) -> None:
    eng.create_queue("q")
    with pytest.raises(errors.QueueNotFound):
        eng.send_one("nope", OutMessage(BODY))
    with pytest.raises(errors.InvalidArgument):
        eng.send_one("q", b"not a message")  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidArgument):
        eng.send_one(["q"], OutMessage(BODY))  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidArgument):
        eng.send_one("q", OutMessage("text"))  # type: ignore[arg-type]
    assert general.calls == 4


def test_lane_send_nested_in_tx_is_a_savepoint_of_the_general_way(
    eng: Engine, general: Recorder
) -> None:
    eng.create_queue("q")
    with pytest.raises(RuntimeError), eng.tx():
        eng.send_one("q", OutMessage(BODY))
        raise RuntimeError("the application's transaction fails")
    assert general.calls == 1
    assert eng.receive("q") == []


def test_lanes_are_kept_only_for_queues(eng: Engine) -> None:
    """An unknown name is asked again each time rather than remembered: a client sending
    to random names cannot grow the lane map."""
    eng.create_queue("q")
    eng.send_one("q", OutMessage(BODY))
    for i in range(200):
        with pytest.raises(errors.QueueNotFound):
            eng.send_one(f"missing-{i}", OutMessage(BODY))
    assert list(eng.catalog._committed.lanes) == ["q"]


# -- the catalog is read again under the writer -----------------------------------------


def test_lane_follows_a_reconfigured_queue(eng: Engine, general: Recorder) -> None:
    eng.create_queue("q")
    first = eng.send_one("q", OutMessage(BODY))
    eng.create_queue("q", QueueConfig(default_ttl_ms=30_000))
    second = eng.send_one("q", OutMessage(BODY))
    assert general.calls == 0
    assert row(eng, first)["expires_at"] == 0
    assert row(eng, second)["expires_at"] == START_MS + 30_000


def test_lane_rereads_the_catalog_under_the_writer(eng: Engine, general: Recorder) -> None:
    """The queue is deleted after the lane found it and before it took the writer: the
    send must not store a row in a queue that no longer exists."""
    eng.create_queue("q")
    assert eng.catalog.send_lane("q") is not None  # the lane, for this catalog version
    real = eng.store.lock

    class RacingToken:
        """The writer token; the lane's first try at it lets a DeleteQueue commit first."""

        raced = False

        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            if not blocking and not RacingToken.raced:
                RacingToken.raced = True
                racer = threading.Thread(target=eng.delete_queue, args=("q",))
                racer.start()
                racer.join()
            return real.acquire(blocking, timeout)

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    eng.store.lock = RacingToken()  # type: ignore[assignment]
    try:
        with pytest.raises(errors.QueueNotFound):
            eng.send_one("q", OutMessage(BODY))
    finally:
        eng.store.lock = real
    assert RacingToken.raced
    assert general.calls == 1
    with eng.tx() as tx:
        assert tx.execute("SELECT count(*) FROM messages").fetchone()[0] == 0


# -- a failure on the lane is the general way's failure ---------------------------------


class FullOnInsert:
    """The real connection, whose message INSERTs fail as on a full disk (SQLITE_FULL)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._refuse(sql)
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._refuse(sql)  # (the general way sends through a wrapper with executemany)
        return self._conn.executemany(sql, *args)

    @staticmethod
    def _refuse(sql: str) -> None:
        if sql.lstrip().upper().startswith("INSERT INTO MESSAGES"):
            err = sqlite3.OperationalError("database or disk is full")
            err.sqlite_errorcode = 13  # type: ignore[attr-defined]
            raise err

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_a_failing_lane_send_rolls_back_counts_and_releases_the_writer(
    eng: Engine, general: Recorder
) -> None:
    eng.create_queue("q")
    real = eng.store.conn
    failures = eng.storage_ops.stats["transaction", "error", "full"]
    eng.store.conn = FullOnInsert(real)  # type: ignore[assignment]
    try:
        with pytest.raises(errors.StorageFull):
            eng.send_one("q", OutMessage(BODY))
        assert general.calls == 0, "the failure happened on the lane"
        assert failures.count == 1
        assert not real.in_transaction, "the lane left its transaction open"
        with pytest.raises(errors.StorageFull):
            eng.messaging._send_one("q", OutMessage(BODY), None)
        assert failures.count == 2, "the general way counts it the same way"
    finally:
        eng.store.conn = real
    assert not eng.writer.owned() and eng.writer._owner == 0
    assert eng.send_one("q", OutMessage(BODY)) > 0, "the writer was not released"
    assert enqueued(eng, "q") == 1

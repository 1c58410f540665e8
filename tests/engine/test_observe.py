"""The canonical observation (api-reference "Observe"; observability "Message effects",
"Availability and freshness"): queue gauges from one grouped read, every message-effect
event counted once and only after commit, storage operations by outcome."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqlite import errors
from mqlite.clock import FakeClock
from mqlite.engine import Engine, store
from mqlite.engine.measure import EVENTS
from mqlite.engine.observe import QUEUE_GAUGES_SQL
from mqlite.server.metrics import render
from mqlite.types import OutMessage, QueueConfig
from waiting import one_batch

START = 1_700_000_000_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def eng(tmp_path: Path, clock: FakeClock) -> Iterator[Engine]:
    e = Engine(f"file:{tmp_path / 'mq.db'}", clock=clock)
    try:
        yield e
    finally:
        e.close()


def effects(e: Engine) -> dict[tuple[str, str], int]:
    return {(m.queue, m.event): m.count for m in e.observe().messages if m.count}


def ops(e: Engine) -> dict[tuple[str, str, str], int]:
    return {
        (s.operation, s.outcome, s.error_code): s.count
        for s in e.observe().storage.operations
        if s.count
    }


def msg(body: bytes = b"x", **kw: str) -> OutMessage:
    return OutMessage(body=body, **kw)


# -- the grouped read ------------------------------------------------------------------


def test_queue_gauges_are_one_scan_of_messages_joined_to_every_queue() -> None:
    c = sqlite3.connect(":memory:")
    for stmt in store.schema_statements():
        c.execute(stmt)
    plan = [r[3] for r in c.execute("EXPLAIN QUERY PLAN " + QUEUE_GAUGES_SQL)]
    scans = [p for p in plan if p.startswith("SCAN")]
    assert scans.count("SCAN messages") == 1, plan  # the one grouped message scan
    assert all("messages" not in p for p in plan if p.startswith("SEARCH")), plan
    assert not any("CORRELATED" in p for p in plan), plan


def test_gauges_per_state_unexpected_rows_and_oldest_age(eng: Engine, clock: FakeClock) -> None:
    eng.create_queue("a")
    eng.create_queue("empty")
    eng.send("a", [msg(), msg(), msg()])
    clock.advance(5_000)
    eng.schedule("a", [msg()], at_ms=clock.now_ms() + 60_000)
    (m,) = eng.receive("a", 1)
    eng.defer("a", m.seq_number, m.lock_token)
    # A row in a state no operation produces ('completed' passes the CHECK): retained and
    # reported as unexpected, never silently dropped.
    with eng.tx() as tx:
        tx.execute("UPDATE messages SET state = 'completed' WHERE id = 2")
    clock.advance(2_000)
    o = eng.observe()
    assert o.collection.state == "available" and o.collection.error_code == ""
    assert o.collection.last_success_at_ms == o.sampled_at_ms == clock.now_ms()
    assert (o.queue_count, o.subscription_count) == (2, 0)
    gauges = {g.queue: g for g in o.queues or ()}
    a = gauges["a"]
    assert (a.active, a.locked, a.deferred, a.scheduled, a.dead_lettered) == (1, 0, 1, 1, 0)
    assert (a.total, a.unexpected) == (4, 1)
    assert a.oldest_message_age_ms == 7_000  # the active row, enqueued 7 s ago
    e = gauges["empty"]
    assert (e.total, e.oldest_message_age_ms) == (0, 0)


def test_runtime_reports_the_probe_and_the_local_footprint(eng: Engine, tmp_path: Path) -> None:
    observed = eng.observe()
    rt = observed.runtime
    assert rt.read_available and rt.ping_seconds > 0 and observed.backend == "local"
    assert rt.db_size_available and rt.db_size_bytes == eng.store.db_size_bytes() > 0
    mem = Engine(":memory:")
    try:
        rt = mem.observe().runtime
        # The original's zero, with the flag that says it is not a measurement.
        assert not rt.db_size_available and rt.db_size_bytes == 0
        assert mem.observe().backend == "memory"
    finally:
        mem.close()


# -- message effects ---------------------------------------------------------------------


def test_every_event_of_the_spec_table_is_counted(eng: Engine, clock: FakeClock) -> None:
    cfg = QueueConfig(max_delivery_count=2, dedup_window_ms=60_000, default_ttl_ms=0)
    eng.create_queue("q", cfg)
    eng.create_queue("ttl", QueueConfig(default_ttl_ms=1_000, dead_letter_on_expire=False))
    eng.create_queue("ret", QueueConfig(dlq_max_count=1))
    eng.send("q", [msg(b"1", message_id="m1"), msg(b"2"), msg(b"3"), msg(b"4"), msg(b"5")])
    eng.send("q", [msg(b"1", message_id="m1")])  # duplicate: suppressed
    assert eng.send("q", [msg(b"other", message_id="m1"), msg(b"6")])[0] == 0  # in a batch
    with pytest.raises(errors.DedupConflict):  # refused alone: still a conflicting attempt
        eng.send_one("q", msg(b"other", message_id="m1"))
    at = clock.now_ms() + 1_000
    s1, s2 = eng.schedule("q", [msg(b"s1"), msg(b"s2")], at_ms=at)
    eng.cancel("q", s2)
    m1, m2, m3, m4 = eng.receive("q", 4)
    eng.complete("q", m1.seq_number, m1.lock_token)
    eng.abandon("q", m2.seq_number, m2.lock_token)
    eng.defer("q", m3.seq_number, m3.lock_token)
    eng.reject("q", m4.seq_number, m4.lock_token, "bad")
    (d,) = eng.receive_deferred("q", [m3.seq_number])  # a claim of a delivered message
    eng.complete("q", d.seq_number, d.lock_token)
    (again,) = eng.receive("q", 1)  # m2 again: delivery 2 of max 2
    assert again.delivery_count == 2
    eng.abandon("q", again.seq_number, again.lock_token)  # at the limit: dead-lettered
    (m5,) = eng.receive("q", 1, mode="receive_and_delete")
    assert eng.redrive("q", max=1) == 1
    assert eng.purge("q") == 1
    (lease,) = eng.receive("q", 1)
    clock.advance(31_000)  # past the lease and the schedule
    eng.reap_locks()
    eng.activate_scheduled()
    eng.send("ttl", [msg()])
    clock.advance(2_000)
    eng.expire_ttl()
    eng.send("ret", [msg(), msg()])
    for m in eng.receive("ret", 2):
        eng.reject("ret", m.seq_number, m.lock_token)
    eng.run_janitors()
    got = effects(eng)
    assert {event for _, event in got} == set(EVENTS) - {"recovered"}
    assert got["q", "enqueued"] == 8 and got["q", "scheduled"] == 2
    assert got["q", "deduplicated"] == 1 and got["q", "dedup_conflict"] == 2
    assert got["q", "delivered"] == 8 and got["q", "redelivered"] == 2
    assert got["q", "completed"] == 2 and got["q", "receive_deleted"] == 1
    assert got["q", "abandoned"] == 2 and got["q", "deferred"] == 1
    assert got["q", "rejected"] == 1 and got["q", "dead_lettered"] == 2
    assert got["q", "canceled"] == 1 and got["q", "activated"] == 1
    assert got["q", "lock_expired"] == 1 and got["ttl", "ttl_discarded"] == 1
    assert got["ret", "retention_deleted"] == 1
    assert (got["q", "redriven"], got["q", "purged"]) == (1, 1)
    del lease, m5, s1


def test_recovery_at_open_counts_recovered(tmp_path: Path, clock: FakeClock) -> None:
    path = f"file:{tmp_path / 'r.db'}"
    e = Engine(path, clock=clock)
    e.create_queue("q")
    e.send("q", [msg(), msg()])
    e.receive("q", 2)
    e.close()  # two leases outlive the process
    e = Engine(path, clock=clock)
    try:
        assert effects(e) == {("q", "recovered"): 2}
    finally:
        e.close()


def test_every_event_of_every_known_queue_is_present_zeros_included(eng: Engine) -> None:
    """spec/observe-wire.md "Messages": all 20 events per known queue, sorted by queue
    then event, so a first completion shows in increase() (issue 28)."""
    eng.create_queue("b")
    eng.create_queue("a")
    rows = [(m.queue, m.event, m.count) for m in eng.observe().messages]
    assert rows == [(q, e, 0) for q in ("a", "b") for e in sorted(EVENTS)]
    eng.send("a", [msg()])
    rows = [(m.queue, m.event, m.count) for m in eng.observe().messages]
    assert len(rows) == 40 and ("a", "enqueued", 1) in rows
    assert sum(n for _, _, n in rows) == 1


def test_a_deleted_queue_takes_its_counters_with_it(eng: Engine) -> None:
    """Issue 26: thousands of deleted (reply) queues kept their series forever. Create and
    delete many; the observation ends where it began, and a queue created again under a
    deleted name starts from zero."""
    eng.create_queue("stays")
    before = eng.observe().messages
    series = _series(eng)
    for i in range(200):
        eng.create_queue(f"reply-{i}")
        eng.send(f"reply-{i}", [msg()])
        (m,) = eng.receive(f"reply-{i}", 1)
        eng.complete(f"reply-{i}", m.seq_number, m.lock_token)
        eng.delete_queue(f"reply-{i}")
    eng.subscribe("t", "sub")
    eng.send("t", [msg()])
    (m,) = eng.receive("sub", 1)
    eng.complete("sub", m.seq_number, m.lock_token)
    eng.unsubscribe("t", "sub")
    assert eng.observe().messages == before
    assert _series(eng) == series  # /metrics, rendered from the same observation
    eng.create_queue("reply-0")
    assert {m.count for m in eng.observe().messages if m.queue == "reply-0"} == {0}


def _series(eng: Engine) -> set[str]:
    """The /metrics series names with their labels (values and timestamps left out)."""
    text = render(eng.observe()).decode()
    return {line.rsplit(" ", 1)[0] for line in text.splitlines() if not line.startswith("#")}


def test_a_delete_whose_commit_fails_keeps_the_counters(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng.create_queue("q")
    eng.send("q", [msg()])
    (m,) = eng.receive("q", 1)
    eng.complete("q", m.seq_number, m.lock_token)
    before = effects(eng)

    def full_disk(conn: sqlite3.Connection) -> None:
        exc = sqlite3.OperationalError("database or disk is full")
        exc.sqlite_errorcode = 13  # type: ignore[attr-defined]
        raise exc

    monkeypatch.setattr(eng.store, "_commit", full_disk)
    with pytest.raises(errors.StorageError):
        eng.delete_queue("q")
    monkeypatch.undo()
    assert effects(eng) == before and before["q", "completed"] == 1
    eng.delete_queue("q")
    assert effects(eng) == {}


def test_topic_fanout_counts_copies_not_requests(eng: Engine) -> None:
    eng.subscribe("t", "s1")
    eng.subscribe("t", "s2", "subject == 'x'")
    eng.send("t", [msg(subject="x"), msg(subject="y")])
    got = effects(eng)
    assert (got["s1", "enqueued"], got["s2", "enqueued"]) == (2, 1)


def test_a_rolled_back_outbox_counts_nothing(eng: Engine) -> None:
    eng.create_queue("q")
    with pytest.raises(RuntimeError), eng.tx() as tx:
        tx.send("q", [msg(), msg()])
        raise RuntimeError("the application's own failure")
    assert effects(eng) == {}
    with eng.tx() as tx:
        tx.send("q", [msg()])
    assert effects(eng) == {("q", "enqueued"): 1}


def test_a_failed_commit_counts_nothing(eng: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    eng.create_queue("q")
    eng.send("q", [msg()])
    before = effects(eng)

    def full_disk(conn: sqlite3.Connection) -> None:
        exc = sqlite3.OperationalError("database or disk is full")
        exc.sqlite_errorcode = 13  # type: ignore[attr-defined]
        raise exc

    monkeypatch.setattr(eng.store, "_commit", full_disk)
    with pytest.raises(errors.StorageError):
        eng.send("q", [msg()])
    with pytest.raises(errors.StorageError):
        eng.receive("q", 1)
    monkeypatch.undo()
    assert effects(eng) == before
    assert ops(eng)["transaction", "error", "full"] == 2


def test_replays_count_once(eng: Engine) -> None:
    eng.create_queue("q")
    eng.send("q", [msg(), msg()])
    first = eng.receive("q", 1, attempt_id="attempt-1")
    assert eng.receive("q", 1, attempt_id="attempt-1") == first  # the exact replay
    (m,) = first
    eng.complete("q", m.seq_number, m.lock_token)
    eng.complete("q", m.seq_number, m.lock_token)  # receipt replay: succeeds, no new effect
    (m2,) = eng.receive("q", 1)
    eng.reject("q", m2.seq_number, m2.lock_token, "r")
    eng.reject("q", m2.seq_number, m2.lock_token, "r")
    got = effects(eng)
    assert got["q", "delivered"] == 2 and got["q", "completed"] == 1
    assert got["q", "rejected"] == 1 and got["q", "dead_lettered"] == 1


# -- storage operations ----------------------------------------------------------------


def test_storage_operations_by_outcome(eng: Engine) -> None:
    eng.create_queue("q")
    before = ops(eng)
    with pytest.raises(errors.LockLost):
        eng.complete("q", 1, "nope")  # refused by application logic, not an outage
    after = ops(eng)
    assert after["transaction", "rejected", "application"] == 1
    assert after["transaction", "ok", ""] == before["transaction", "ok", ""]
    assert after["read", "ok", ""] > before["read", "ok", ""]  # observing reads too
    eng.checkpoint()
    assert ops(eng)["write", "ok", ""] == 1
    every = {(s.operation, s.outcome, s.error_code) for s in eng.observe().storage.operations}
    assert len(every) == 33  # 3 operations x 11 fixed outcome/code pairs, zeros included


def _batched(eng: Engine, calls: int) -> list[BaseException | None]:
    """Run ``calls`` sends as ONE group-commit batch (``waiting.one_batch``: queued while
    the writer is held, taken together once released, as its test signals confirm)."""
    results: list[BaseException | None] = []

    def caller() -> None:
        try:
            eng.writer.call_on_thread(eng.send, "q", [msg()])
            results.append(None)
        except BaseException as exc:
            results.append(exc)

    with one_batch(eng.writer) as batch:
        for _ in range(calls):
            batch.start(caller)
    return results


def test_a_batch_counts_each_call_and_a_failed_batch_commit_counts_nothing(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng.create_queue("q")
    before = ops(eng)["transaction", "ok", ""]
    assert _batched(eng, 3) == [None] * 3
    assert ops(eng)["transaction", "ok", ""] == before + 3
    assert effects(eng) == {("q", "enqueued"): 3}

    def io_error(conn: sqlite3.Connection) -> None:
        exc = sqlite3.OperationalError("disk I/O error")
        exc.sqlite_errorcode = 10  # type: ignore[attr-defined]
        raise exc

    monkeypatch.setattr(eng.store, "_commit", io_error)
    failed = _batched(eng, 3)
    monkeypatch.undo()
    assert all(isinstance(r, errors.StorageError) for r in failed), failed
    assert effects(eng) == {("q", "enqueued"): 3}  # none of the failed batch
    # One batch (its test signals say so), one failed COMMIT: one failed operation.
    assert ops(eng)["transaction", "error", "io"] == 1


def test_a_reload_after_an_unknown_commit_outcome_drops_vanished_queues_counters(
    eng: Engine,
) -> None:
    """After a COMMIT of unknown outcome the catalog is read again (core.py); a delete
    that did commit ran no after-commit callback, so the reload drops its counters."""
    for name in ("gone", "kept"):
        eng.create_queue(name)
        eng.send(name, [msg()])
    (m,) = eng.receive("gone", 1)
    eng.complete("gone", m.seq_number, m.lock_token)
    with eng.tx() as tx:  # the delete's rows, committed without its callbacks
        tx.execute("DELETE FROM queues WHERE name = 'gone'")

    def reload() -> None:
        with eng.store.transaction() as conn:
            eng._reload_published(conn)

    eng.writer.call_on_thread(reload)
    assert {q for q, _ in effects(eng)} == {"kept"}
    assert {m.queue for m in eng.observe().messages} == {"kept"}

"""The audit trail in the engine (docs/operations.md "Audit trail"): one row per change of
state that is not a message operation, written in the change's own transaction (a
rolled-back change leaves none), naming the actor and never a token or a body; ListAudit
paging and bounds; retention by age (the fake clock) and by count, in bounded chunks."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqlite import OutMessage, QueueConfig, errors
from mqlite.clock import FakeClock
from mqlite.engine import Engine, audit
from mqlite.engine.audit import Actor
from mqlite.types import AuditEntry

START_MS = 1_700_000_000_000
DAY_MS = 24 * 3600 * 1000
ADMIN = Actor("admin:2", "req-7")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START_MS)


@pytest.fixture
def eng(tmp_path: Path, clock: FakeClock) -> Iterator[Engine]:
    e = Engine(f"file:{tmp_path / 'audit.db'}", clock=clock)
    try:
        yield e
    finally:
        e.close()


def trail(e: Engine, **kw: object) -> list[AuditEntry]:
    return e.list_audit(limit=1000, **kw)  # type: ignore[arg-type]


def one(e: Engine, action: str) -> AuditEntry:
    (row,) = [r for r in trail(e) if r.action == action]
    return row


def dead_letters(e: Engine, queue: str, n: int) -> None:
    e.send(queue, [OutMessage(f"m{i}".encode()) for i in range(n)])
    for m in e.receive(queue, max_messages=n):
        m.reject("bad")


def test_every_admin_verb_writes_one_row_with_its_actor_and_facts(eng: Engine) -> None:
    eng.create_queue("orders", QueueConfig(max_delivery_count=5), actor=ADMIN)
    eng.create_queue("orders", QueueConfig(max_delivery_count=7), actor=ADMIN)
    eng.create_queue("other", actor=ADMIN)
    eng.ensure_queue("ensured", actor=ADMIN)
    eng.ensure_queue("ensured", actor=ADMIN)  # exists: nothing changed, no row
    eng.subscribe("events", "billing", "subject == 'x'", actor=ADMIN)
    eng.unsubscribe("events", "billing", actor=ADMIN)
    dead_letters(eng, "orders", 3)
    assert eng.redrive("orders", target="other", max=1) == 1  # embedded: no actor given
    assert eng.purge_chunk("orders", 0, 0, actor=ADMIN)[0] == 2
    eng.create_key("a" * 32, "ci", ["send"], queues=["orders"], actor=ADMIN)
    eng.revoke_key("a" * 32, actor=ADMIN)
    eng.revoke_key("a" * 32, actor=ADMIN)  # again: no change, no second row
    eng.create_schedule("nightly", "@daily", "orders", OutMessage(b"secret-body"), actor=ADMIN)
    assert eng.delete_schedule("nightly", actor=ADMIN)
    assert not eng.delete_schedule("nightly", actor=ADMIN)  # none: no row
    eng.delete_queue("ensured", actor=ADMIN)

    rows = trail(eng)
    assert [r.action for r in rows] == [
        "CreateQueue", "CreateQueue", "CreateQueue", "EnsureQueue", "Subscribe", "Unsubscribe",
        "Redrive", "Purge", "CreateKey", "RevokeKey", "CreateSchedule", "DeleteSchedule",
        "DeleteQueue",
    ]  # fmt: skip
    assert [r.id for r in rows] == sorted(r.id for r in rows)
    assert all(r.at_ms == START_MS for r in rows)
    by = {r.action: r for r in rows}
    assert {(r.actor, r.request_id) for r in rows if r.action != "Redrive"} == {
        ("admin:2", "req-7")
    }
    assert (by["Redrive"].actor, by["Redrive"].request_id) == ("embedded", "")
    first, second = rows[0], rows[1]
    assert json.loads(first.detail) == {"created": True}
    assert json.loads(second.detail) == {"created": False, "diff": {"max_delivery_count": [5, 7]}}
    assert json.loads(by["Redrive"].detail) == {"count": 1, "target": "other"}
    assert json.loads(by["Purge"].detail) == {"count": 2}
    assert (by["Subscribe"].queue, json.loads(by["Subscribe"].detail)) == (
        "events",
        {"subscription": "billing", "filter": "subject == 'x'"},
    )
    key = json.loads(by["CreateKey"].detail)
    assert (key["id"], key["permissions"], key["queues"]) == ("a" * 32, ["send"], ["orders"])
    assert by["CreateKey"].queue == ""
    assert json.loads(by["DeleteSchedule"].detail) == {"name": "nightly"}
    assert by["DeleteSchedule"].queue == "orders"
    everything = " ".join(f"{r.detail} {r.queue} {r.actor}" for r in rows)
    assert "mqk_" not in everything  # never a token
    assert "secret-body" not in everything  # never a body


def test_the_embedded_client_is_the_actor_embedded(tmp_path: Path) -> None:
    import mqlite

    mq = mqlite.open_embedded(f"file:{tmp_path / 'e.db'}", background=False)
    try:
        mq.create_queue("q")
        mq.delete_queue("q")
        got = mq.list_audit()
    finally:
        mq.close()
    assert [(e.action, e.actor, e.request_id) for e in got] == [
        ("CreateQueue", "embedded", ""),
        ("DeleteQueue", "embedded", ""),
    ]


def test_a_rolled_back_change_leaves_no_audit_row(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure comes AFTER both the change and its audit row were written, inside
    the same transaction: the rollback takes both."""
    eng.subscribe("t", "s1")
    before = trail(eng)

    original = audit.record
    written: list[str] = []

    def record_then_fail(conn: sqlite3.Connection, now: int, actor: object, action: str,
                         queue: str = "", **detail: object) -> None:  # fmt: skip
        original(conn, now, actor, action, queue, **detail)  # type: ignore[arg-type]
        written.append(action)
        raise errors.Internal("injected after the audit row")

    monkeypatch.setattr(audit, "record", record_then_fail)
    with pytest.raises(errors.Internal):
        eng.create_queue("never", actor=ADMIN)
    with pytest.raises(errors.Internal):
        eng.create_key("b" * 32, "k", ["send"], actor=ADMIN)
    with pytest.raises(errors.Internal):
        eng.unsubscribe("t", "s1", actor=ADMIN)
    monkeypatch.undo()
    assert written == [
        "CreateQueue",
        "CreateKey",
        "Unsubscribe",
    ]  # the rows were written, then undone
    assert trail(eng) == before
    assert [s.name for s in eng.list_subscriptions()] == ["s1"]
    with pytest.raises(errors.QueueNotFound):
        eng.get_queue("never")
    assert eng.list_keys()[0] == []


def test_list_audit_pages_filters_and_bounds(eng: Engine, clock: FakeClock) -> None:
    for i in range(5):
        eng.create_queue(f"q{i}", actor=ADMIN)
        clock.advance(1000)
    ids = [r.id for r in trail(eng)]
    assert [r.id for r in eng.list_audit(limit=2)] == ids[:2]
    assert [r.id for r in eng.list_audit(after_id=ids[1], limit=2)] == ids[2:4]
    assert eng.list_audit(after_id=ids[-1]) == []
    assert [r.queue for r in eng.list_audit(queue="q3")] == ["q3"]
    assert [r.queue for r in eng.list_audit(since_ms=START_MS + 3000)] == ["q3", "q4"]
    assert eng.list_audit(since_ms=START_MS + 10_000) == []
    assert len(eng.list_audit(limit=0)) == 5  # 0 = the default (100)
    for bad in (
        {"limit": 1001},
        {"limit": -1},
        {"after_id": -1},
        {"since_ms": -5},
        {"limit": "10"},
        {"queue": 5},
    ):
        with pytest.raises(errors.InvalidArgument):
            eng.list_audit(**bad)  # type: ignore[arg-type]
    assert len(eng.list_audit(limit=1000)) == 5


def test_retention_by_age_with_the_fake_clock(eng: Engine, clock: FakeClock) -> None:
    eng.create_queue("old")
    clock.advance(60 * DAY_MS)
    eng.create_queue("recent")
    clock.advance(31 * DAY_MS)  # "old" is now 91 days old, "recent" 31
    assert eng.run_maintenance_once().audit_pruned == 1
    assert [r.queue for r in trail(eng)] == ["recent"]
    retention = {t.task: t for t in eng.observe().maintenance}["retention"]
    assert retention.runs == 1 and retention.failures == 0  # in Observe with the DLQ's


def test_retention_by_count_in_bounded_chunks(eng: Engine) -> None:
    n = audit.PRUNE_CHUNK_ROWS * audit.PRUNE_CHUNKS_PER_PASS + 500
    with eng.store.transaction() as conn:
        for i in range(n):
            audit.record(conn, START_MS, None, "CreateQueue", f"q{i}")
    eng.audit_max_rows = 100
    # One pass deletes at most PRUNE_CHUNKS_PER_PASS chunks: the rest waits for the next.
    assert eng.prune_audit() == audit.PRUNE_CHUNK_ROWS * audit.PRUNE_CHUNKS_PER_PASS
    assert eng.prune_audit() == 400
    kept = trail(eng)
    assert len(kept) == 100 and kept[-1].queue == f"q{n - 1}"  # the newest stay
    assert eng.prune_audit() == 0
    eng.audit_max_rows = 0  # no bound
    eng.create_queue("more")
    assert eng.prune_audit() == 0 and len(trail(eng)) == 101

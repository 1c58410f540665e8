"""Redrive and Purge (original-behaviour §6, §13.15): chunk selection, in-place vs
cross-queue field rules, purge scoping, and the pinned query plan of every statement."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from engine_sqldb import (
    add_msg,
    add_queue,
    assert_plan,
    ids,
    msg,
    plan,
    seed_for_planner,
    state_of,
    tx,
)

from mqlite.engine import dlq
from mqlite.errors import InvalidArgument, QueueNotFound

NOW = 1_000_000


def add_dead(conn: sqlite3.Connection, queue: str, enqueued_at: int = 0, **cols: Any) -> int:
    return add_msg(conn, queue, state="dead_lettered", enqueued_at=enqueued_at, **cols)


def dead(conn: sqlite3.Connection, queue: str) -> list[int]:
    return ids(conn, "queue = ? AND state = 'dead_lettered'", queue)


def do_redrive(conn: sqlite3.Connection, queue: str, **kw: Any) -> tuple[int, int]:
    kw = {"target": None, "max": 0, "older_than_ms": 0, **kw}
    with tx(conn):
        return dlq.redrive(conn, NOW, queue, **kw)


def do_purge(conn: sqlite3.Connection, queue: str, **kw: Any) -> int:
    kw = {"max": 0, "older_than_ms": 0, **kw}
    with tx(conn):
        return dlq.purge(conn, NOW, queue, **kw)[0]


FULL = {
    "enqueued_at": 500,
    "expires_at": 900,
    "visible_at": 700,
    "delivery_count": 10,
    "message_id": "mid",
    "correlation_id": "cid",
    "reply_to": "rt",
    "group_id": "g",
    "content_type": "application/json",
    "subject": "s",
    "properties": '{"k":"v"}',
    "body": b"payload",
    "dead_letter_reason": "MaxDeliveryCountExceeded",
    "dead_letter_description": "too many",
}
METADATA = (
    "message_id", "correlation_id", "reply_to", "group_id", "content_type", "subject",
    "properties", "body",
)  # fmt: skip


# --- redrive -------------------------------------------------------------------------


@pytest.mark.parametrize("target", [None, "", "q"])
def test_redrive_in_place_resets_delivery_and_keeps_enqueue_and_expiry(
    conn: sqlite3.Connection, target: str | None
) -> None:
    add_queue(conn, "q")
    seq = add_msg(conn, "q", state="dead_lettered", **FULL)
    assert do_redrive(conn, "q", target=target) == (1, seq)
    row = msg(conn, seq)
    assert row is not None
    assert row["state"] == "active"
    assert row["delivery_count"] == 0
    assert (row["lock_token"], row["locked_until"], row["visible_at"]) == (None, 0, 0)
    assert (row["dead_letter_reason"], row["dead_letter_description"]) == (None, None)
    assert (row["enqueued_at"], row["expires_at"]) == (500, 900)
    assert {k: row[k] for k in METADATA} == {k: FULL[k] for k in METADATA}


def test_redrive_cross_queue_copies_with_new_seq_fresh_enqueue_and_no_ttl(
    conn: sqlite3.Connection,
) -> None:
    add_queue(conn, "src")
    add_queue(conn, "dst")
    first = add_msg(conn, "src", state="dead_lettered", **FULL)
    second = add_msg(conn, "src", state="dead_lettered", **{**FULL, "message_id": "mid2"})
    assert do_redrive(conn, "src", target="dst") == (2, second)
    assert msg(conn, first) is None and msg(conn, second) is None
    copies = [msg(conn, s) for s in ids(conn, "queue = 'dst'")]
    assert [c["message_id"] for c in copies if c] == ["mid", "mid2"]  # source order kept
    for row in copies:
        assert row is not None
        assert row["id"] > second
        assert row["state"] == "active"
        assert (row["delivery_count"], row["visible_at"], row["locked_until"]) == (0, 0, 0)
        assert (row["enqueued_at"], row["expires_at"]) == (NOW, 0)
        assert row["lock_token"] is None
        assert (row["dead_letter_reason"], row["dead_letter_description"]) == (None, None)
        assert {k: row[k] for k in METADATA if k != "message_id"} == {
            k: FULL[k] for k in METADATA if k != "message_id"
        }


def test_redrive_max_takes_oldest_by_seq_and_reports_last(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seqs = [add_dead(conn, "q") for _ in range(5)]
    assert do_redrive(conn, "q", max=2) == (2, seqs[1])
    assert dead(conn, "q") == seqs[2:]
    assert ids(conn, "state = 'active'") == seqs[:2]


def test_redrive_chunks_until_the_dlq_is_empty(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "t")
    seqs = [add_dead(conn, "q") for _ in range(5)]
    chunks = []
    while (chunk := do_redrive(conn, "q", target="t", max=2)) != (0, 0):
        chunks.append(chunk)
    assert chunks == [(2, seqs[1]), (2, seqs[3]), (1, seqs[4])]
    assert len(ids(conn, "queue = 't' AND state = 'active'")) == 5


def test_redrive_older_than_filters_on_original_enqueue(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    old = add_dead(conn, "q", enqueued_at=NOW - 101)
    edge = add_dead(conn, "q", enqueued_at=NOW - 100)
    young = add_dead(conn, "q", enqueued_at=NOW)
    old2 = add_dead(conn, "q", enqueued_at=0)
    assert do_redrive(conn, "q", older_than_ms=100) == (2, old2)
    assert ids(conn, "state = 'active'") == [old, old2]
    assert dead(conn, "q") == [edge, young]


def test_redrive_max_and_older_than_combine(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "t")
    young = add_dead(conn, "q", enqueued_at=NOW)
    olds = [add_dead(conn, "q", enqueued_at=0) for _ in range(3)]
    assert do_redrive(conn, "q", target="t", max=2, older_than_ms=10) == (2, olds[1])
    assert dead(conn, "q") == [young, olds[2]]


def test_redrive_only_moves_that_queues_dead_letters(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "other")
    add_queue(conn, "t")
    mine = add_dead(conn, "q")
    theirs = add_dead(conn, "other")
    live = {s: add_msg(conn, "q", state=s) for s in ("active", "locked", "deferred", "scheduled")}
    assert do_redrive(conn, "q", target="t") == (1, mine)
    assert dead(conn, "other") == [theirs]
    assert {s: state_of(conn, seq) for s, seq in live.items()} == {s: s for s in live}


def test_redrive_empty_dlq_moves_nothing(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "t")
    add_msg(conn, "q", state="active")
    assert do_redrive(conn, "q") == (0, 0)
    assert do_redrive(conn, "q", target="t") == (0, 0)


@pytest.mark.parametrize(("max_", "older"), [(-1, 0), (0, -1)])
def test_redrive_negative_bounds_are_invalid(
    conn: sqlite3.Connection, max_: int, older: int
) -> None:
    add_queue(conn, "q")
    add_dead(conn, "q")
    with pytest.raises(InvalidArgument):
        do_redrive(conn, "q", max=max_, older_than_ms=older)
    assert len(dead(conn, "q")) == 1


def test_redrive_to_missing_target_is_queue_not_found(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seq = add_dead(conn, "q")
    with pytest.raises(QueueNotFound):
        do_redrive(conn, "q", target="nope")
    assert dead(conn, "q") == [seq]


# --- purge ---------------------------------------------------------------------------


def test_purge_with_no_bounds_deletes_the_whole_dlq(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    for _ in range(4):
        add_dead(conn, "q")
    assert do_purge(conn, "q") == 4
    assert dead(conn, "q") == []


def test_purge_max_deletes_oldest_by_seq(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    seqs = [add_dead(conn, "q") for _ in range(5)]
    assert do_purge(conn, "q", max=3) == 3
    assert dead(conn, "q") == seqs[3:]


def test_purge_older_than_filters_on_enqueue(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_dead(conn, "q", enqueued_at=NOW - 11)
    edge = add_dead(conn, "q", enqueued_at=NOW - 10)
    young = add_dead(conn, "q", enqueued_at=NOW)
    assert do_purge(conn, "q", older_than_ms=10) == 1
    assert dead(conn, "q") == [edge, young]


def test_purge_max_and_older_than_combine(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    young = add_dead(conn, "q", enqueued_at=NOW)
    olds = [add_dead(conn, "q", enqueued_at=0) for _ in range(3)]
    assert do_purge(conn, "q", max=2, older_than_ms=1) == 2
    assert dead(conn, "q") == [young, olds[2]]


def test_purge_is_scoped_to_the_queue_and_the_dlq(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "other")
    add_dead(conn, "q")
    theirs = add_dead(conn, "other")
    live = [add_msg(conn, "q", state=s) for s in ("active", "locked", "deferred", "scheduled")]
    assert do_purge(conn, "q") == 1
    assert ids(conn) == sorted([theirs, *live])


def test_purge_of_unknown_or_empty_queue_deletes_nothing(conn: sqlite3.Connection) -> None:
    assert do_purge(conn, "ghost") == 0


@pytest.mark.parametrize(("max_", "older"), [(-1, 0), (0, -1)])
def test_purge_negative_bounds_are_invalid(conn: sqlite3.Connection, max_: int, older: int) -> None:
    add_queue(conn, "q")
    add_dead(conn, "q")
    with pytest.raises(InvalidArgument):
        do_purge(conn, "q", max=max_, older_than_ms=older)
    assert len(dead(conn, "q")) == 1


# --- query plans ---------------------------------------------------------------------

PLANS: dict[str, set[str]] = {
    "DLQ_CHUNK_SQL": {"idx_msg_dlq"},
    "DLQ_LAST_SQL": {"idx_msg_dlq"},
    "REDRIVE_IN_PLACE_SQL": {"idx_msg_dlq"},
    "REDRIVE_COPY_SQL": {"idx_msg_dlq"},
    "REDRIVE_COPY_BODIES_SQL": {"idx_msg_dlq"},
    "DLQ_DELETE_CHUNK_SQL": {"idx_msg_dlq"},
    "QUEUE_EXISTS_SQL": {"sqlite_autoindex_queues_1"},
}


# The chunk materialized once (it is bounded by the chunk's size, found on idx_msg_dlq).
# json_each: the console's selection (seq_numbers), a list of at most MAX_DLQ_SELECTION
# built once per statement (LIST SUBQUERY), never a scan of messages.
_SELECTION = "json_each"
SCANS: dict[str, set[str]] = {
    name: {_SELECTION} for name in PLANS if name != "QUEUE_EXISTS_SQL"
} | {"REDRIVE_COPY_BODIES_SQL": {"c", _SELECTION}}


def test_every_sql_constant_has_a_pinned_plan() -> None:
    assert {name for name in dir(dlq) if name.endswith("_SQL")} == set(PLANS)


@pytest.mark.parametrize("analyze", [False, True], ids=["fresh", "analyzed"])
@pytest.mark.parametrize("name", sorted(PLANS))
def test_dlq_statement_plans_on_its_index(
    conn: sqlite3.Connection, name: str, analyze: bool
) -> None:
    seed_for_planner(conn, analyze)
    lines = plan(conn, getattr(dlq, name))
    assert_plan(lines, PLANS[name], SCANS.get(name, ()))
    if name != "QUEUE_EXISTS_SQL":  # the chunk is a range of idx_msg_dlq (queue, id)
        assert any("idx_msg_dlq (queue=?" in line for line in lines), lines

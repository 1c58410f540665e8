"""Peek and Stats (original-behaviour §5, docs "Peek"/"Stats"): paging, state filter,
byte budget, never a lock token, stats counts and ages, and the pinned query plans."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from engine_sqldb import add_msg, add_queue, assert_plan, plan, seed_for_planner, tx

from mqlite import defaults
from mqlite.engine import peek as pk
from mqlite.engine.budget import encoded_size
from mqlite.errors import InvalidArgument, QueueNotFound
from mqlite.types import State, Stats

NOW = 1_000_000
STATES = [s.value for s in State]


def seqs(messages: list[Any]) -> list[int]:
    return [m.seq_number for m in messages]


def page(conn: sqlite3.Connection, queue: str = "q", **kw: Any) -> list[Any]:
    kw = {"state": None, "from_seq": 0, "max": 0, **kw}
    return pk.peek(conn, queue, **kw)


# --- peek ----------------------------------------------------------------------------


def test_peek_pages_in_seq_order_from_inclusive_seq(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    all_ = [add_msg(conn, "q") for _ in range(6)]
    assert seqs(page(conn, max=4)) == all_[:4]
    assert seqs(page(conn, from_seq=all_[2], max=2)) == all_[2:4]
    assert seqs(page(conn, from_seq=all_[-1] + 1)) == []


def test_peek_without_state_merges_every_state_in_seq_order(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "other")
    mine = []
    for i in range(10):
        add_msg(conn, "other")
        mine.append(add_msg(conn, "q", state=STATES[(i * 3) % 5]))
    got = page(conn)
    assert seqs(got) == mine
    assert [m.state for m in got] == [STATES[(i * 3) % 5] for i in range(10)]
    assert seqs(page(conn, from_seq=mine[4], max=3)) == mine[4:7]


@pytest.mark.parametrize("state", STATES)
def test_peek_state_filter_returns_only_that_state(conn: sqlite3.Connection, state: str) -> None:
    add_queue(conn, "q")
    by_state = {s: [add_msg(conn, "q", state=s) for _ in range(2)] for s in STATES}
    got = page(conn, state=state)
    assert seqs(got) == by_state[state]
    assert {m.state for m in got} == {state}
    assert seqs(page(conn, state=State(state), from_seq=by_state[state][1])) == by_state[state][1:]


def test_peek_empty_state_means_no_filter(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    both = [add_msg(conn, "q", state="active"), add_msg(conn, "q", state="deferred")]
    assert seqs(page(conn, state="")) == both


@pytest.mark.parametrize("state", ["completed", "ACTIVE", "bogus"])
def test_peek_unknown_state_is_invalid_argument(conn: sqlite3.Connection, state: str) -> None:
    with pytest.raises(InvalidArgument):
        page(conn, state=state)


def test_peek_max_defaults_to_32_and_caps_at_1000(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    with tx(conn):
        for _ in range(defaults.PEEK_MAX + 5):
            add_msg(conn, "q")
    assert len(page(conn, max=0)) == defaults.PEEK_DEFAULT_MAX == 32
    assert len(page(conn, max=-7)) == 32
    assert len(page(conn, max=5)) == 5
    assert len(page(conn, max=defaults.PEEK_MAX + 1)) == defaults.PEEK_MAX == 1000


@pytest.mark.parametrize(("units", "expected"), [(2.5, 3), (2, 2), (0, 1), (1000, 5)])
def test_peek_stops_after_the_message_that_reaches_the_byte_budget(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch, units: float, expected: int
) -> None:
    add_queue(conn, "q")
    all_ = [add_msg(conn, "q", body=b"x" * 10) for _ in range(5)]
    unit = encoded_size(page(conn)[0])  # every field is charged, not only the body
    monkeypatch.setattr(defaults, "RESPONSE_BYTE_BUDGET", max(1, int(units * unit)))
    got = page(conn)
    assert seqs(got) == all_[:expected]
    # the next page continues from last + 1
    assert seqs(page(conn, from_seq=got[-1].seq_number + 1))[:1] == all_[expected : expected + 1]


def test_peek_never_returns_a_lock_token(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_msg(conn, "q", state="locked", lock_token="secret", locked_until=NOW, delivery_count=1)
    for got in (page(conn), page(conn, state="locked")):
        assert len(got) == 1
        assert got[0].lock_token == ""
        assert (got[0].state, got[0].locked_until_ms, got[0].delivery_count) == ("locked", NOW, 1)


def test_peek_shows_schedule_expiry_and_dead_letter_fields(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_msg(conn, "q", state="scheduled", visible_at=NOW + 5, expires_at=NOW + 9, enqueued_at=7)
    add_msg(
        conn, "q", state="dead_lettered", dead_letter_reason="TTLExpired",
        dead_letter_description="d", properties='{"a":"b"}', body=b"hi", subject="s",
    )  # fmt: skip
    sched, dl = page(conn)
    assert (sched.visible_at_ms, sched.expires_at_ms, sched.enqueued_at_ms) == (NOW + 5, NOW + 9, 7)
    assert (dl.dead_letter_reason, dl.dead_letter_description) == ("TTLExpired", "d")
    assert (dl.properties, dl.body, dl.subject, dl.queue) == ({"a": "b"}, b"hi", "s", "q")


def test_peek_expired_but_unswept_rows_keep_their_state(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_msg(conn, "q", state="locked", lock_token="t", locked_until=1, expires_at=1)
    assert [m.state for m in page(conn)] == ["locked"]


def test_peek_unknown_queue_is_an_empty_page(conn: sqlite3.Connection) -> None:
    assert page(conn, queue="ghost") == []
    assert page(conn, queue="ghost", state="active") == []


# --- stats ---------------------------------------------------------------------------


def test_stats_counts_each_state_and_total(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_queue(conn, "other")
    for n, state in enumerate(STATES, start=1):
        for _ in range(n):
            add_msg(conn, "q", state=state, enqueued_at=NOW)
            add_msg(conn, "other", state=state, enqueued_at=0)
    assert pk.stats(conn, NOW, "q") == Stats(
        queue="q", active=1, locked=2, deferred=3, scheduled=4, dead_lettered=5, total=15,
        oldest_message_age_ms=0,
    )  # fmt: skip


def test_stats_age_counts_only_active_and_locked(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    for state in ("deferred", "scheduled", "dead_lettered"):
        add_msg(conn, "q", state=state, enqueued_at=1)
    add_msg(conn, "q", state="active", enqueued_at=NOW - 300)
    add_msg(conn, "q", state="locked", enqueued_at=NOW - 500, lock_token="t", locked_until=NOW)
    add_msg(conn, "q", state="active", enqueued_at=NOW - 400)
    assert pk.stats(conn, NOW, "q").oldest_message_age_ms == 500


def test_stats_age_uses_min_enqueue_not_lowest_seq(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_msg(conn, "q", state="active", enqueued_at=NOW - 10)
    add_msg(conn, "q", state="active", enqueued_at=NOW - 90)  # later seq, older enqueue
    assert pk.stats(conn, NOW, "q").oldest_message_age_ms == 90


def test_stats_age_is_zero_without_active_or_locked(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_msg(conn, "q", state="deferred", enqueued_at=0)
    assert pk.stats(conn, NOW, "q").oldest_message_age_ms == 0
    add_queue(conn, "empty")
    assert pk.stats(conn, NOW, "empty") == Stats(queue="empty")


def test_stats_age_is_never_negative(conn: sqlite3.Connection) -> None:
    add_queue(conn, "q")
    add_msg(conn, "q", state="active", enqueued_at=NOW + 1000)  # clock stepped back
    assert pk.stats(conn, NOW, "q").oldest_message_age_ms == 0


def test_stats_unknown_queue_is_queue_not_found(conn: sqlite3.Connection) -> None:
    with pytest.raises(QueueNotFound):
        pk.stats(conn, NOW, "ghost")


# --- query plans ---------------------------------------------------------------------

STATE_INDEX = {
    "active": "idx_msg_active",
    "locked": "idx_msg_locked_head",
    "deferred": "idx_msg_deferred",
    "scheduled": "idx_msg_sched_head",
    "dead_lettered": "idx_msg_dlq",
}
PLANS: dict[str, set[str]] = {
    "PEEK_ACTIVE_SQL": {"idx_msg_active"},
    "PEEK_LOCKED_SQL": {"idx_msg_locked_head"},
    "PEEK_DEFERRED_SQL": {"idx_msg_deferred"},
    "PEEK_SCHEDULED_SQL": {"idx_msg_sched_head"},
    "PEEK_DEAD_LETTERED_SQL": {"idx_msg_dlq"},
    "PEEK_ALL_SQL": set(STATE_INDEX.values()),
    "STATS_SQL": {*STATE_INDEX.values(), "sqlite_autoindex_queues_1"},
}


def test_every_sql_constant_has_a_pinned_plan() -> None:
    assert {name for name in dir(pk) if name.endswith("_SQL")} == set(PLANS)


@pytest.mark.parametrize("analyze", [False, True], ids=["fresh", "analyzed"])
@pytest.mark.parametrize("name", sorted(PLANS))
def test_peek_statement_plans_on_its_index(
    conn: sqlite3.Connection, name: str, analyze: bool
) -> None:
    seed_for_planner(conn, analyze)
    lines = plan(conn, getattr(pk, name))
    assert_plan(lines, PLANS[name])
    assert not any(line.startswith("SCAN messages") for line in lines)
    if name.startswith("PEEK_"):  # a seek from from_seq, in index order: no sort step
        assert not any("TEMP B-TREE" in line for line in lines), lines
        seeks = [line for line in lines if line.startswith("SEARCH messages")]
        assert seeks and all("(queue=? AND id>?)" in line for line in seeks), lines


@pytest.mark.parametrize("state", STATES)
def test_peek_state_filter_seeks_that_states_index(conn: sqlite3.Connection, state: str) -> None:
    lines = plan(conn, pk._PEEK_BY_STATE[state])
    assert STATE_INDEX[state] in "\n".join(lines), lines

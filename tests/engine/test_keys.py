"""Managed access keys (api-reference "CreateKey / ListKeys / RevokeKey", "Access keys")."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqlite import errors
from mqlite.clock import FakeClock
from mqlite.engine import Engine, keys
from mqlite.types import AccessKey, Permission

START_MS = 1_700_000_000_000
HEX32 = re.compile(r"[0-9a-f]{32}")
TOKEN = re.compile(r"mqk_[0-9a-f]{64}")


KeyEngine = Engine  # the verbs under test are AccessKeys'; tx() comes with the facade


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START_MS)


@pytest.fixture
def eng(tmp_path: Path, clock: FakeClock) -> Iterator[KeyEngine]:
    e = KeyEngine(f"file:{tmp_path / 'keys.db'}", clock=clock)
    try:
        yield e
    finally:
        e.close()


def kid(n: int) -> str:
    return f"{n:032x}"


def rows(e: KeyEngine) -> list[tuple[object, ...]]:
    with e.store.transaction() as conn:
        return [tuple(r) for r in conn.execute("SELECT * FROM access_keys ORDER BY id")]


def list_all(e: KeyEngine, sort: str, limit: int) -> list[AccessKey]:
    out: list[AccessKey] = []
    cursor = ""
    page_size = limit or 100
    while True:
        page, cursor = e.list_keys(after_id=cursor, limit=limit, sort=sort)
        assert len(page) <= page_size
        out.extend(page)
        if not cursor:
            return out
        assert len(page) == page_size
        assert cursor == page[-1].id


# -- pure helpers ----------------------------------------------------------------------


def test_generated_ids_are_32_lowercase_hex_and_distinct() -> None:
    ids = {keys.generate_key_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(HEX32.fullmatch(i) for i in ids)


def test_generated_tokens_are_mqk_plus_64_lowercase_hex() -> None:
    tokens = {keys.generate_token() for _ in range(200)}
    assert len(tokens) == 200
    for t in tokens:
        assert TOKEN.fullmatch(t)
        assert len(t) == 68 and t.isascii()


def test_token_digest_is_sha256_hex() -> None:
    assert keys.token_digest("mqk_x") == hashlib.sha256(b"mqk_x").hexdigest()
    assert keys.token_digest("MQK_X") != keys.token_digest("mqk_x")


@pytest.mark.parametrize(
    ("given_", "want"),
    [
        (["send"], ("send",)),
        (["listen"], ("listen",)),
        (["send", "listen"], ("listen", "send")),
        (["listen", "send", "send"], ("listen", "send")),
        (["manage"], ("manage",)),
        (["send", "manage"], ("manage",)),
        (["manage", "listen", "send", "manage"], ("manage",)),
        ((Permission.SEND, Permission.LISTEN), ("listen", "send")),
        (("send",), ("send",)),
    ],
)
def test_normalize_permissions(given_: list[str], want: tuple[str, ...]) -> None:
    got = keys.normalize_permissions(given_)
    assert got == want
    assert all(type(p) is str for p in got)


@pytest.mark.parametrize(
    "bad",
    [[], (), ["monitor"], ["SEND"], ["send", "admin"], [""], [" send"], "send", b"send", None, 1,
     [1], [None], {"send": True}],
)  # fmt: skip
def test_normalize_permissions_refuses_empty_unknown_and_non_lists(bad: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        keys.normalize_permissions(bad)


@given(st.lists(st.sampled_from(["send", "listen", "manage"]), min_size=1, max_size=6))
def test_normalize_permissions_property(perms: list[str]) -> None:
    got = keys.normalize_permissions(perms)
    if "manage" in perms:
        assert got == ("manage",)
    else:
        assert got == tuple(sorted(set(perms)))
    assert keys.normalize_permissions(list(got)) == got


@pytest.mark.parametrize(
    "name",
    [
        "a",
        "orders-producer",
        "x" * 128,
        "é" * 64,
        "日本" * 21 + "xy",
        "in ner",
        "tab\tinside",
        "a\x1f",
    ],
)
def test_valid_names(name: str) -> None:
    assert keys.validate_key_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["", "x" * 129, "é" * 64 + "x", "日本" * 21 + "xyz", " a", "a ", "\ta", "a\n", "\u00a0a",
     "a\u3000", "a\x00b", "\x00", "\ud800", None, 5, b"name"],
)  # fmt: skip
def test_invalid_names(name: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        keys.validate_key_name(name)


@pytest.mark.parametrize("id_", [kid(0), kid(1), "f" * 32, "0123456789abcdef" * 2])
def test_valid_ids(id_: str) -> None:
    assert keys.validate_key_id(id_) == id_


@pytest.mark.parametrize(
    "id_",
    ["", "a" * 31, "a" * 33, "A" * 32, "g" * 32, "a" * 31 + "\n", " " + "a" * 31,
     "0x" + "a" * 30, "ａ" * 32, None, 123, b"a" * 32],
)  # fmt: skip
def test_invalid_ids(id_: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        keys.validate_key_id(id_)


# -- create ----------------------------------------------------------------------------


def test_create_returns_metadata_and_a_fresh_token(eng: KeyEngine) -> None:
    key, token = eng.create_key(kid(1), "orders-producer", ["send"])
    assert key == AccessKey(kid(1), "orders-producer", ("send",), START_MS, 0, 0)
    assert TOKEN.fullmatch(token)
    assert token not in repr(key)


def test_create_normalizes_and_stores_expiry(eng: KeyEngine) -> None:
    key, _ = eng.create_key(kid(2), "ops", ["send", "manage"], expires_at_ms=START_MS + 1)
    assert key.permissions == ("manage",)
    assert key.expires_at_ms == START_MS + 1
    key, _ = eng.create_key(kid(3), "worker", ["send", "listen", "send"])
    assert key.permissions == ("listen", "send")
    assert eng.list_keys()[0] == [
        AccessKey(kid(2), "ops", ("manage",), START_MS, START_MS + 1, 0),
        AccessKey(kid(3), "worker", ("listen", "send"), START_MS, 0, 0),
    ]


def test_only_the_digest_is_stored(eng: KeyEngine) -> None:
    _, token = eng.create_key(kid(1), "n", ["listen"])
    (row,) = rows(eng)
    assert row[2] == hashlib.sha256(token.encode()).hexdigest()
    for value in row:
        assert token not in str(value)
        assert token[len("mqk_") :] not in str(value)


@pytest.mark.parametrize("expires", [START_MS, START_MS - 1, 1, -1])
def test_expiry_now_or_past_is_refused(eng: KeyEngine, expires: int) -> None:
    with pytest.raises(errors.InvalidArgument):
        eng.create_key(kid(1), "n", ["send"], expires_at_ms=expires)
    assert rows(eng) == []


@pytest.mark.parametrize("expires", [True, 1.5e12, "1", None])
def test_expiry_must_be_an_integer(eng: KeyEngine, expires: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        eng.create_key(kid(1), "n", ["send"], expires_at_ms=expires)  # type: ignore[arg-type]


def test_create_validates_every_field_before_writing(eng: KeyEngine) -> None:
    for args in (("A" * 32, "n", ["send"]), (kid(1), " n", ["send"]), (kid(1), "n", ["x"])):
        with pytest.raises(errors.InvalidArgument):
            eng.create_key(*args)
    assert rows(eng) == []


def test_duplicate_id_is_key_conflict_and_changes_nothing(eng: KeyEngine) -> None:
    first, token = eng.create_key(kid(1), "a", ["send"])
    before = rows(eng)
    with pytest.raises(errors.KeyConflict) as exc:
        eng.create_key(kid(1), "b", ["manage"])
    assert exc.value.code == "key_conflict"
    assert rows(eng) == before
    assert eng.authenticate_key(token) == first


def test_duplicate_digest_is_key_conflict(eng: KeyEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "generate_token", lambda: "mqk_" + "0" * 64)
    eng.create_key(kid(1), "a", ["send"])
    with pytest.raises(errors.KeyConflict):
        eng.create_key(kid(2), "b", ["send"])
    assert [r[0] for r in rows(eng)] == [kid(1)]


def test_names_need_not_be_unique(eng: KeyEngine) -> None:
    eng.create_key(kid(1), "same", ["send"])
    eng.create_key(kid(2), "same", ["send"])
    assert [k.name for k in eng.list_keys()[0]] == ["same", "same"]


def test_keys_survive_reopen(tmp_path: Path, clock: FakeClock) -> None:
    dsn = f"file:{tmp_path / 'k.db'}"
    e = KeyEngine(dsn, clock=clock)
    key, token = e.create_key(kid(7), "n", ["listen", "send"])
    e.close()
    e = KeyEngine(dsn, clock=clock)
    try:
        assert e.authenticate_key(token) == key
    finally:
        e.close()


# -- list ------------------------------------------------------------------------------


def seed(eng: KeyEngine, clock: FakeClock) -> list[AccessKey]:
    """Nine keys: ids out of creation order and several equal creation timestamps."""
    ids = [kid(n) for n in (5, 2, 9, 1, 7, 3, 8, 4, 6)]
    steps = [0, 0, 3, 0, 0, 0, 1, 2, 0]
    made = []
    for id_, step in zip(ids, steps, strict=True):
        clock.advance(step)
        made.append(eng.create_key(id_, f"k{id_[-1]}", ["send"])[0])
    return made


def test_empty_list(eng: KeyEngine) -> None:
    assert eng.list_keys() == ([], "")
    assert eng.list_keys(sort="created_desc") == ([], "")


@pytest.mark.parametrize("limit", [1, 2, 3, 9, 10, 0, 1000])
def test_id_asc_pagination(eng: KeyEngine, clock: FakeClock, limit: int) -> None:
    made = seed(eng, clock)
    want = sorted(made, key=lambda k: k.id)
    for sort in ("", "id_asc"):
        assert list_all(eng, sort, limit) == want


@pytest.mark.parametrize("limit", [1, 2, 3, 9, 10, 0, 1000])
def test_created_desc_pagination(eng: KeyEngine, clock: FakeClock, limit: int) -> None:
    made = seed(eng, clock)
    want = sorted(made, key=lambda k: (k.created_at_ms, k.id), reverse=True)
    got = list_all(eng, "created_desc", limit)
    assert got == want
    # Equal timestamps break ties by id descending.
    assert [k.id for k in got] == [kid(n) for n in (6, 4, 8, 9, 7, 3, 1, 5, 2)]


def test_created_desc_ties_use_id_descending(eng: KeyEngine) -> None:
    for n in (3, 1, 2):
        eng.create_key(kid(n), "n", ["send"])
    page, cursor = eng.list_keys(limit=2, sort="created_desc")
    assert [k.id for k in page] == [kid(3), kid(2)]
    assert cursor == kid(2)
    page, cursor = eng.list_keys(after_id=cursor, limit=2, sort="created_desc")
    assert [k.id for k in page] == [kid(1)]
    assert cursor == ""


def test_exact_last_page_has_no_cursor(eng: KeyEngine, clock: FakeClock) -> None:
    seed(eng, clock)
    assert eng.list_keys(limit=9)[1] == ""
    assert eng.list_keys(limit=8)[1] == kid(8)
    assert eng.list_keys(limit=9, sort="created_desc")[1] == ""


def test_default_limit_is_100(eng: KeyEngine) -> None:
    for n in range(101):
        eng.create_key(kid(n + 1), "n", ["send"])
    for limit in (100, 0):
        page, cursor = eng.list_keys(limit=limit)
        assert len(page) == 100 and cursor == kid(100)
    page, cursor = eng.list_keys()
    assert len(page) == 100 and cursor == kid(100)


@pytest.mark.parametrize("limit", [-1, 1001, True, "10", None, 2.0])
def test_bad_limits(eng: KeyEngine, limit: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        eng.list_keys(limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("sort", ["ID_ASC", "created_asc", "id_desc", " id_asc", None, 1])
def test_unknown_sort(eng: KeyEngine, sort: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        eng.list_keys(sort=sort)  # type: ignore[arg-type]


def test_id_asc_accepts_an_absent_cursor_for_predecessor_lookup(
    eng: KeyEngine, clock: FakeClock
) -> None:
    seed(eng, clock)
    page, cursor = eng.list_keys(after_id=kid(0), limit=1)
    assert [k.id for k in page] == [kid(1)] and cursor == kid(1)
    # A retained id is found through its immediate predecessor (itself absent) and limit 1.
    retained = "a" * 32
    eng.create_key(retained, "lost response", ["send"])
    page, _ = eng.list_keys(after_id="a" * 31 + "9", limit=1)
    assert [k.id for k in page] == [retained]
    assert eng.list_keys(after_id="f" * 32) == ([], "")


def test_created_desc_refuses_an_absent_cursor(eng: KeyEngine, clock: FakeClock) -> None:
    seed(eng, clock)
    with pytest.raises(errors.InvalidArgument):
        eng.list_keys(after_id=kid(100), sort="created_desc")


@pytest.mark.parametrize("cursor", ["A" * 32, "abc", " ", None, 5])
def test_malformed_cursor_is_refused_in_both_sorts(eng: KeyEngine, cursor: object) -> None:
    for sort in ("id_asc", "created_desc"):
        with pytest.raises(errors.InvalidArgument):
            eng.list_keys(after_id=cursor, sort=sort)  # type: ignore[arg-type]


def test_revoked_and_expired_keys_are_listed_in_place(eng: KeyEngine, clock: FakeClock) -> None:
    eng.create_key(kid(1), "a", ["send"], expires_at_ms=START_MS + 10)
    eng.create_key(kid(2), "b", ["send"])
    clock.advance(1)
    eng.create_key(kid(3), "c", ["send"])
    before_asc = [k.id for k in eng.list_keys()[0]]
    before_desc = [k.id for k in eng.list_keys(sort="created_desc")[0]]
    clock.advance(100)
    eng.revoke_key(kid(2))
    assert [k.id for k in eng.list_keys()[0]] == before_asc
    listed = eng.list_keys(sort="created_desc")[0]
    assert [k.id for k in listed] == before_desc == [kid(3), kid(2), kid(1)]
    assert listed[1].revoked_at_ms == START_MS + 101
    assert listed[2].expires_at_ms == START_MS + 10
    # A revoked key is still a valid created_desc cursor.
    assert [k.id for k in eng.list_keys(kid(2), sort="created_desc")[0]] == [kid(1)]


# -- revoke ----------------------------------------------------------------------------


def test_revoke_is_idempotent_and_keeps_the_first_timestamp(
    eng: KeyEngine, clock: FakeClock
) -> None:
    eng.create_key(kid(1), "a", ["send"])
    clock.advance(5)
    eng.revoke_key(kid(1))
    clock.advance(5)
    eng.revoke_key(kid(1))
    (key,) = eng.list_keys()[0]
    assert key.revoked_at_ms == START_MS + 5


def test_revoke_unknown_is_not_found(eng: KeyEngine) -> None:
    with pytest.raises(errors.NotFound):
        eng.revoke_key(kid(1))


@pytest.mark.parametrize("bad", ["", "A" * 32, None])
def test_revoke_malformed_id_is_invalid(eng: KeyEngine, bad: object) -> None:
    with pytest.raises(errors.InvalidArgument):
        eng.revoke_key(bad)  # type: ignore[arg-type]


def test_revoke_affects_only_that_key(eng: KeyEngine) -> None:
    _, t1 = eng.create_key(kid(1), "a", ["manage"])
    k2, t2 = eng.create_key(kid(2), "b", ["send"])
    eng.revoke_key(kid(1))
    assert eng.authenticate_key(t1) is None
    assert eng.authenticate_key(t2) == k2


def test_revoke_at_clock_zero_still_revokes(tmp_path: Path) -> None:
    clock = FakeClock(0)
    e = KeyEngine(f"file:{tmp_path / 'z.db'}", clock=clock)
    try:
        _, token = e.create_key(kid(1), "a", ["send"])
        e.revoke_key(kid(1))
        assert e.authenticate_key(token) is None
        assert e.list_keys()[0][0].revoked_at_ms > 0
    finally:
        e.close()


# -- authenticate ----------------------------------------------------------------------


def test_authenticate_valid(eng: KeyEngine) -> None:
    key, token = eng.create_key(kid(1), "a", ["listen"])
    assert eng.authenticate_key(token) == key


def test_authenticate_expiry_boundary(eng: KeyEngine, clock: FakeClock) -> None:
    key, token = eng.create_key(kid(1), "a", ["send"], expires_at_ms=START_MS + 10)
    clock.advance(9)
    assert eng.authenticate_key(token) == key
    clock.advance(1)  # now == expires_at: expired
    assert eng.authenticate_key(token) is None
    clock.advance(1)
    assert eng.authenticate_key(token) is None


def test_authenticate_revoked(eng: KeyEngine) -> None:
    _, token = eng.create_key(kid(1), "a", ["send"])
    eng.revoke_key(kid(1))
    assert eng.authenticate_key(token) is None


@pytest.mark.parametrize(
    "token", ["", "mqk_" + "0" * 64, "nope", "\ud800", None, b"mqk_", "Bearer x"]
)
def test_authenticate_unknown_or_malformed(eng: KeyEngine, token: object) -> None:
    eng.create_key(kid(1), "a", ["send"])
    assert eng.authenticate_key(token) is None  # type: ignore[arg-type]


def test_authenticate_is_case_sensitive(eng: KeyEngine) -> None:
    _, token = eng.create_key(kid(1), "a", ["send"])
    assert eng.authenticate_key(token.upper()) is None
    assert eng.authenticate_key(token + " ") is None


def test_authenticate_on_a_closed_store_raises_not_none(tmp_path: Path) -> None:
    e = KeyEngine(f"file:{tmp_path / 'c.db'}", clock=FakeClock(START_MS))
    _, token = e.create_key(kid(1), "a", ["send"])
    e.close()
    with pytest.raises(errors.MQLiteError):
        e.authenticate_key(token)


def test_authenticate_needs_no_writer_and_no_database_read(eng: KeyEngine) -> None:
    """Checking a managed key is a memory read: it answers while another thread holds the
    writer in a long transaction (no writer hop per request)."""
    _, token = eng.create_key(kid(1), "a", ["send"])
    entered, release = threading.Event(), threading.Event()

    def hold_the_writer() -> None:
        with eng.tx():
            entered.set()
            release.wait(10)

    holder = threading.Thread(target=hold_the_writer)
    holder.start()
    try:
        assert entered.wait(10)
        answers: list[object] = []
        probe = threading.Thread(target=lambda: answers.append(eng.authenticate_key(token)))
        probe.start()
        probe.join(5)
        assert not probe.is_alive(), "authentication waited for the writer"
        assert answers and isinstance(answers[0], AccessKey)
    finally:
        release.set()
        holder.join(10)


def test_keys_survive_a_reopen_and_a_revocation_stays_revoked(tmp_path: Path) -> None:
    """The in-memory key set is loaded from the database at open."""
    dsn = f"file:{tmp_path / 'k.db'}"
    e = KeyEngine(dsn, clock=FakeClock(START_MS))
    _, live = e.create_key(kid(1), "live", ["send"])
    _, gone = e.create_key(kid(2), "gone", ["listen"])
    e.revoke_key(kid(2))
    e.close()
    e = KeyEngine(dsn, clock=FakeClock(START_MS))
    try:
        assert e.authenticate_key(live) is not None
        assert e.authenticate_key(gone) is None
    finally:
        e.close()


def test_a_rolled_back_creation_does_not_authenticate(eng: KeyEngine) -> None:
    """The cache learns a key only when its row commits."""
    with pytest.raises(RuntimeError), eng.tx():
        _, token = eng.create_key(kid(1), "a", ["send"])
        raise RuntimeError("roll back")
    assert eng.authenticate_key(token) is None


# -- plans -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plan_conn() -> sqlite3.Connection:
    """The real schema with a seeded, ANALYZEd key table."""
    from mqlite.engine import store

    c = sqlite3.connect(":memory:")
    for stmt in store.schema_statements():
        c.execute(stmt)
    c.executemany(
        "INSERT INTO access_keys(id, name, token_sha256, permissions, created_at)"
        " VALUES (?, 'n', ?, 'send', ?)",
        [(kid(i), f"{i:064x}", i // 3) for i in range(2000)],
    )
    c.execute("ANALYZE")
    return c


def plan(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> str:
    return "\n".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params))


def assert_seek(text: str, index: str) -> None:
    assert index in text, text
    assert "SCAN" not in text and "TEMP B-TREE" not in text, text


def test_plan_list_by_id_seeks_the_primary_key(plan_conn: sqlite3.Connection) -> None:
    text = plan(plan_conn, keys.LIST_BY_ID_SQL, {"after_id": "", "limit": 3})
    assert_seek(text, "(id>?)")


def test_plan_list_by_created_seeks_idx_access_keys_created(
    plan_conn: sqlite3.Connection,
) -> None:
    text = plan(
        plan_conn, keys.LIST_BY_CREATED_SQL, {"created_at": 5, "after_id": kid(1), "limit": 3}
    )
    assert_seek(text, "idx_access_keys_created ((created_at,id)<(?,?))")


@pytest.mark.parametrize("sql", [keys.KEY_CREATED_AT_SQL, keys.KEY_EXISTS_SQL, keys.REVOKE_KEY_SQL])
def test_plan_point_lookups_by_id(plan_conn: sqlite3.Connection, sql: str) -> None:
    assert_seek(plan(plan_conn, sql, {"id": kid(1), "now": 1}), "(id=?)")


def test_plans_hold_on_an_empty_unanalyzed_table(eng: KeyEngine) -> None:
    with eng.store.transaction() as conn:
        assert_seek(plan(conn, keys.LIST_BY_ID_SQL, {"after_id": "", "limit": 1}), "(id>?)")
        text = plan(conn, keys.LIST_BY_CREATED_SQL, {"created_at": 1, "after_id": "", "limit": 1})
        assert_seek(text, "idx_access_keys_created")

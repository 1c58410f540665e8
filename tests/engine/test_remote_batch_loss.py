"""A group-commit batch whose stream's transaction is lost (issue 26): a real sqld behind
a TCP proxy is restarted right after it answered the n-th request of a batch, for every
n from the batch's BEGIN to its COMMIT (``StallProxy.cut_request``), and the answer of
that request never reaches the broker.

The rule pinned at every position: once the transaction is gone nothing more of the
batch runs (no later statement opens a new transaction that commits alone); a call
answered ok is stored; a call answered with an error is not stored unless the error is
``OutcomeUnknown`` (503 outcome_unknown); no call is answered 500; and the broker's
catalog and key cache agree with what the database holds (a queue stored is usable, a
queue deleted is gone, a key revoked is refused) without restarting the broker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mqlite import OutMessage, errors
from mqlite.clock import FakeClock
from mqlite.engine.engine import Engine
from mqlite.engine.remote import RemoteConnection, TransactionLost, parse_remote
from sqld_harness import Sqld, StallProxy, sqld_binary
from waiting import one_batch

T0 = 1_700_000_000_000
MAX_POSITIONS = 40  # a batch of four calls makes about 20 requests; bound the loop anyway


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sqld]:
    """Its own sqld: this module restarts it (by its process id) once per position."""
    sqld = Sqld(sqld_binary(), tmp_path_factory.mktemp("sqld-loss") / "data").start()
    yield sqld
    sqld.stop()


@pytest.fixture
def engine(server: Sqld) -> Iterator[tuple[Engine, StallProxy]]:
    proxy = StallProxy(server.port)
    eng = Engine(proxy.url, clock=FakeClock(T0))
    yield eng, proxy
    eng.close()
    proxy.close()


def truth(server: Sqld, sql: str, *args: Any) -> Any:
    """A value read straight from the server (not through the broker or the proxy)."""
    direct = RemoteConnection(parse_remote(server.url), "")
    try:
        row = direct.execute(sql, args).fetchone()
        return None if row is None else row[0]
    finally:
        direct.close()


def run_batch(eng: Engine, calls: dict[str, Callable[[], Any]]) -> dict[str, BaseException | None]:
    """Run ``calls`` as ONE group-commit batch: the writer's token is held while they
    queue, so the writer thread takes them all together once it is released."""
    outcomes: dict[str, BaseException | None] = {}

    def run(name: str, fn: Callable[[], Any]) -> None:
        try:
            eng.writer.call_on_thread(fn)
            outcomes[name] = None
        except BaseException as exc:
            outcomes[name] = exc

    with one_batch(eng.writer) as batch:
        for name, fn in calls.items():
            batch.start(lambda name=name, fn=fn: run(name, fn))
    return outcomes


def check_position(
    eng: Engine, proxy: StallProxy, server: Sqld, n: int
) -> tuple[bool, dict[str, BaseException | None], list[str]]:
    """One batch with its n-th request cut (sqld restarted): whether the cut happened
    (False: the batch makes fewer than n requests), each call's outcome, and every
    breach of the rule (module doc)."""
    keep, new, sent = f"keep{n}", f"new{n}", f"body{n}".encode()
    eng.create_queue(keep)
    key, token = eng.create_key(f"{n:032x}", f"k{n}", ["send"])

    def restart() -> None:
        server.kill()
        server.start()

    proxy.cut_request(n, then=restart)
    outcomes = run_batch(
        eng,
        {
            "create": lambda: eng.create_queue(new),
            "delete": lambda: eng.delete_queue(keep),
            "revoke": lambda: eng.revoke_key(key.id),
            "send": lambda: eng.send("s", [OutMessage(body=sent)]),
        },
    )
    cut = not proxy.cut_pending
    proxy.cut_request(0)  # disarm (a batch shorter than n)
    stored = {
        "create": truth(server, "SELECT count(*) FROM queues WHERE name=?", new) == 1,
        "delete": truth(server, "SELECT count(*) FROM queues WHERE name=?", keep) == 0,
        "revoke": truth(server, "SELECT revoked_at FROM access_keys WHERE id=?", key.id) != 0,
        "send": truth(server, "SELECT count(*) FROM messages WHERE body=?", sent) == 1,
    }
    breaches: list[str] = []
    for name, failure in outcomes.items():
        where = f"position {n}, {name}: {failure!r}"
        if failure is None:
            if not stored[name]:
                breaches.append(f"answered ok but not stored ({where})")
        elif not isinstance(failure, errors.MQLiteError) or failure.http_status != 503:
            breaches.append(f"answered {getattr(failure, 'http_status', '?')} ({where})")
        elif not isinstance(failure, errors.OutcomeUnknown) and stored[name]:
            breaches.append(f"answered 'nothing committed' but stored ({where})")
    # One batch's calls commit together or not at all: never some of them alone.
    if len(set(stored.values())) != 1:
        breaches.append(f"position {n}: partly stored {stored}")
    # The broker's view matches the database's, with no restart of the broker and no
    # later write: after a commit of unknown outcome the writer reloads it at once.
    # The writer thread reconciles right after answering the batch, before it takes its
    # next call: a no-op call through it returns once that reload is over.
    eng.writer.call_on_thread(lambda: None)
    assert not eng.store.in_doubt
    view = {
        "create": eng.catalog.find(new) is not None,
        "delete": eng.catalog.find(keep) is None,
        "revoke": eng.authenticate_key(token) is None,
    }
    for name, seen in view.items():
        if seen != stored[name]:
            breaches.append(f"position {n}: the broker sees {name}={seen}, stored={stored[name]}")
    return cut, outcomes, breaches


def test_a_batch_whose_transaction_is_lost_runs_nothing_more_and_never_answers_500(
    engine: tuple[Engine, StallProxy], server: Sqld
) -> None:
    eng, proxy = engine
    eng.create_queue("s")
    seen: list[str] = []
    breaches: list[str] = []
    for n in range(1, MAX_POSITIONS + 1):
        cut, outcomes, found = check_position(eng, proxy, server, n)
        breaches += found
        if not cut:
            assert all(v is None for v in outcomes.values()), outcomes
            break
        kinds = {type(v).__name__ for v in outcomes.values() if v is not None}
        seen.append("/".join(sorted(kinds)) or "ok")
    else:
        pytest.fail(f"the batch still made requests after {MAX_POSITIONS}")
    assert not breaches, "\n".join(breaches)
    assert len(seen) >= 8, seen  # every statement of the four calls was cut once
    assert seen[-1] == "OutcomeUnknown", seen  # the COMMIT: applied, answer lost


@pytest.mark.parametrize("how", ["cut", "restart between statements"])
def test_after_its_transaction_is_lost_a_connection_sends_nothing_until_rolled_back(
    server: Sqld, how: str
) -> None:
    """The connection's own guard (below the store's): once the stream's transaction is
    gone, a SAVEPOINT or a write is refused unsent -- on the restarted server it would
    open a new transaction, or commit alone -- until ``rollback()``."""
    proxy = StallProxy(server.port)
    conn = RemoteConnection(parse_remote(proxy.url), "", timeout_s=5.0, sleep=lambda _s: None)
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS lost_t(v TEXT)")
        conn.execute("DELETE FROM lost_t")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO lost_t VALUES ('a')")
        if how == "cut":
            proxy.cut_request(1, then=lambda: (server.kill(), server.start()))
        else:
            server.kill()
            server.start()
        with pytest.raises(TransactionLost):
            conn.execute("INSERT INTO lost_t VALUES ('b')")
        sent = proxy.requests
        for sql in ("SAVEPOINT sp1", "INSERT INTO lost_t VALUES ('c')", "RELEASE sp1", "COMMIT"):
            with pytest.raises(TransactionLost):
                conn.execute(sql)
        assert proxy.requests == sent  # refused without a request
        conn.rollback()
        conn.execute("INSERT INTO lost_t VALUES ('d')")
        assert truth(server, "SELECT group_concat(v) FROM lost_t") == "d"
    finally:
        conn.close()
        proxy.close()

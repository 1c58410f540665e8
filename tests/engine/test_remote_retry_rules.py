"""The remote store's retry rules, without a server: a scripted exchange in place of the
Hrana client (issue 27 item 6: a second, independent catcher of "never retry a COMMIT" and
"never retry a write", besides the real-sqld tests of test_remote_retries.py).

The rule (engine/remote.py): a request that never reached the server whole may be sent
again, whatever it carries; a lost answer is retried only for a lone ``SELECT`` outside a
transaction. A write or a COMMIT whose answer was lost may have been applied: sending it
again could apply it twice, so it fails (the store turns a COMMIT's failure into
``OutcomeUnknown``) after exactly one request -- also when the request carried queued
statements with it (the pipelined transaction, engine/remote_pipeline.py: a BEGIN is
never sent alone, it travels with the transaction's first statement; a request of
several statements is recorded as their verbs joined by ``+``).
"""

from __future__ import annotations

from typing import Any

import pytest

from mqlite.engine.hrana import Result, TransportError
from mqlite.engine.remote import RemoteConnection, RemoteUnreachable, parse_remote

OK = Result((), [], 1, None)
LOST = TransportError("the answer was lost", sent=True)
NOT_SENT = TransportError("connection refused", sent=False)


class ScriptedClient:
    """Answers each request with the next item of ``script`` (an exception is raised);
    records every request the connection sends, retries included."""

    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.sent: list[str] = []
        self.transaction = False

    def execute(self, sql: str, values: Any, *, keep_stream: bool) -> tuple[Result, bool]:
        self.sent.append(sql.split()[0].upper())
        outcome = self.script.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        verb = sql.split()[0].upper()
        if verb == "BEGIN":
            self.transaction = True
        elif verb in ("COMMIT", "ROLLBACK"):
            self.transaction = False
        return outcome, not self.transaction  # (result, autocommit)

    def steps(self, steps: Any, *, keep_stream: bool) -> tuple[list[Result], bool]:
        verbs = [sql.split()[0].upper() for sql, _, _ in steps]
        self.sent.append("+".join(verbs))
        outcome = self.script.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        for verb in verbs:
            if verb == "BEGIN":
                self.transaction = True
            elif verb in ("COMMIT", "ROLLBACK"):
                self.transaction = False
        return [outcome] * len(steps), not self.transaction

    def drop(self) -> None:
        pass

    def close(self) -> None:
        pass


def scripted(script: list[Any]) -> tuple[RemoteConnection, ScriptedClient, list[float]]:
    pauses: list[float] = []
    conn = RemoteConnection(
        parse_remote("libsql://db.example.invalid"), "", timeout_s=5.0, sleep=pauses.append
    )
    client = ScriptedClient(script)
    conn._client = client  # type: ignore[assignment]
    return conn, client, pauses


def test_a_write_whose_answer_was_lost_is_sent_once() -> None:
    conn, client, pauses = scripted([LOST, OK])
    with pytest.raises(RemoteUnreachable):
        conn.execute("INSERT INTO t(v) VALUES (1)")
    assert client.sent == ["INSERT"] and pauses == []


@pytest.mark.parametrize(
    "verb", ["UPDATE t SET v = 2", "DELETE FROM t", "REPLACE INTO t VALUES (1)"]
)
def test_no_write_verb_is_retried_after_a_lost_answer(verb: str) -> None:
    conn, client, _ = scripted([LOST, OK])
    with pytest.raises(RemoteUnreachable):
        conn.execute(verb)
    assert len(client.sent) == 1


def test_a_commit_whose_answer_was_lost_is_sent_once() -> None:
    conn, client, pauses = scripted([OK, LOST, OK])
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO t(v) VALUES (1)")
    with pytest.raises(RemoteUnreachable):
        conn.execute("COMMIT")
    assert client.sent == ["BEGIN+INSERT", "COMMIT"] and pauses == []
    assert not conn.in_transaction


def test_a_commit_carrying_queued_writes_whose_answer_was_lost_is_sent_once() -> None:
    """BEGIN, the queued INSERT and COMMIT in one request: its answer lost, it is never
    sent again (the store makes that OutcomeUnknown)."""
    conn, client, pauses = scripted([LOST, OK])
    conn.execute("BEGIN IMMEDIATE")
    conn.defer("INSERT INTO t(v) VALUES (1)", ())
    with pytest.raises(RemoteUnreachable):
        conn.execute("COMMIT")
    assert client.sent == ["BEGIN+INSERT+COMMIT"] and pauses == []
    assert not conn.in_transaction


def test_a_commit_that_never_reached_the_server_is_sent_again() -> None:
    """The contrast that proves the script can retry at all: nothing ran, so nothing can
    apply twice."""
    conn, client, pauses = scripted([OK, NOT_SENT, OK])
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO t(v) VALUES (1)")
    conn.execute("COMMIT")
    assert client.sent == ["BEGIN+INSERT", "COMMIT", "COMMIT"] and len(pauses) == 1


def test_a_commit_carrying_queued_writes_that_never_reached_the_server_is_sent_again() -> None:
    conn, client, pauses = scripted([NOT_SENT, OK])
    conn.execute("BEGIN IMMEDIATE")
    conn.defer("INSERT INTO t(v) VALUES (1)", ())
    conn.execute("COMMIT")
    assert client.sent == ["BEGIN+INSERT+COMMIT"] * 2 and len(pauses) == 1


def test_a_read_outside_a_transaction_is_retried() -> None:
    conn, client, pauses = scripted([LOST, OK])
    conn.execute("SELECT 1")
    assert len(client.sent) == 2 and len(pauses) == 1


def test_a_begin_is_never_sent_alone_and_a_request_opening_a_transaction_is_not_retried() -> None:
    conn, client, _ = scripted([LOST, OK])
    conn.execute("BEGIN IMMEDIATE")
    assert client.sent == [] and conn.in_transaction  # it waits for the first statement
    with pytest.raises(RemoteUnreachable):
        conn.execute("SELECT 1")
    assert client.sent == ["BEGIN+SELECT"]


def test_a_read_inside_a_transaction_is_not_retried() -> None:
    conn, client, _ = scripted([OK, LOST, OK])
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO t(v) VALUES (1)")
    with pytest.raises(RemoteUnreachable):
        conn.execute("SELECT 1")
    assert client.sent == ["BEGIN+INSERT", "SELECT"]

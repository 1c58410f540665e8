"""The remote store's round trips, counted exactly (issue 29 §4; ``remote_pipeline.py``): a
transaction's statements whose answers are read only after COMMIT travel with the COMMIT,
so ``send_one`` is ONE request (BEGIN, INSERT, COMMIT), a send of 64 one, a drain of 64
(receive 64 + complete_batch) three -- on a real sqld, counted with the remote bench's own
instrument (every ``HttpConnection.post``) -- and the outcome rules stay: a COMMIT whose
answer is lost is ``OutcomeUnknown`` and never sent twice, a queued write's failure fails
its own call and commits nothing of it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, defaults, errors
from mqlite.clock import FakeClock
from mqlite.engine import claim_pipelined, http1
from mqlite.engine.budget import encoded_size
from mqlite.engine.remote import RemoteConnection, parse_remote
from mqlite.engine.remote_pipeline import (
    BEGIN,
    COMMIT,
    OTHER,
    RELEASE,
    ROLLBACK,
    ROLLBACK_TO,
    SAVEPOINT,
    classify,
)
from mqlite.sdk.embedded import EmbeddedClient
from mqlite.types import OrderingMode
from sqld_harness import Sqld, StallProxy

T0 = 1_700_000_000_000


class Posts:
    """Every HTTP request the remote store sends (the bench's instrument:
    tests/bench/remote/sides.py counts around the same method)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def since(self, mark: int) -> list[bytes]:
        return self.bodies[mark:]


@pytest.fixture
def posts(monkeypatch: pytest.MonkeyPatch) -> Posts:
    seen = Posts()
    post = http1.HttpConnection.post

    def counted(self: http1.HttpConnection, head: bytes, body: bytes) -> tuple[int, bytes]:
        seen.bodies.append(body)
        return post(self, head, body)

    monkeypatch.setattr(http1.HttpConnection, "post", counted)
    return seen


@pytest.fixture
def mq(remote_dsn: str) -> Iterator[EmbeddedClient]:
    client = mqlite.open_embedded(remote_dsn, clock=FakeClock(T0), background=False)
    client.create_queue("q", QueueConfig())
    yield client
    client.close()


def _msgs(n: int, body: bytes = b"x" * 256) -> list[OutMessage]:
    return [OutMessage(body=body)] * n


def test_send_one_is_one_round_trip_carrying_begin_insert_and_commit(
    mq: EmbeddedClient, posts: Posts
) -> None:
    mark = len(posts.bodies)
    first = mq.send_one("q", OutMessage(body=b"a"))
    second = mq.send_one("q", OutMessage(body=b"b"))
    sent = posts.since(mark)
    assert len(sent) == 2  # one request per send
    for body in sent:
        assert body.index(b"BEGIN") < body.index(b"INSERT INTO messages") < body.index(b"COMMIT")
    assert second == first + 1  # the seq comes back with the COMMIT's answer
    assert [m.seq_number for m in mq.peek("q", max=10)] == [first, second]


def test_a_send_of_64_is_one_round_trip(mq: EmbeddedClient, posts: Posts) -> None:
    mark = len(posts.bodies)
    seqs = mq.send("q", _msgs(64))
    assert len(posts.since(mark)) == 1
    assert seqs == list(range(seqs[0], seqs[0] + 64))
    assert mq.stats("q").active == 64


def test_a_drain_of_64_is_three_round_trips_at_most_eight(mq: EmbeddedClient, posts: Posts) -> None:
    """receive 64: the claims in one request (with BEGIN), COMMIT in a second (the
    messages are answered only once their claim committed); complete_batch 64: one. The
    first receive of a queue on a connection sends its claims in growing chunks (8, 16,
    32, 8: a poll that finds one message sends 8 claims, not 64), the next ones as many
    as the last one took."""
    drains = []
    for _ in range(3):
        mq.send("q", _msgs(64))
        mark = len(posts.bodies)
        got = mq.receive("q", max_messages=64)
        receive = len(posts.since(mark))
        mark = len(posts.bodies)
        results = mq.complete_batch("q", [(m.seq_number, m.lock_token) for m in got])
        assert len(got) == 64 and all(r.ok for r in results)
        drains.append((receive, len(posts.since(mark))))
    assert drains == [(5, 1), (2, 1), (2, 1)]
    assert all(sum(d) <= 8 for d in drains)
    assert mq.stats("q").total == 0
    # Completing again answers from the receipts (a lost answer retried), in one request.
    mark = len(posts.bodies)
    again = mq.complete_batch("q", [(m.seq_number, m.lock_token) for m in got])
    assert all(r.ok for r in again) and len(posts.since(mark)) == 1
    completed = [m.count for m in mq.observe().messages if (m.queue, m.event) == ("q", "completed")]
    assert completed == [3 * 64]  # counted once, not twice


def test_a_poll_that_finds_one_message_sends_a_small_chunk_of_claims(
    mq: EmbeddedClient, posts: Posts
) -> None:
    """sqld reads every statement of a batch, those it skips too: a receive of 64 that
    finds one message must not send 64 claims."""
    mq.send_one("q", OutMessage(body=b"one"))
    mark = len(posts.bodies)
    assert len(mq.receive("q", max_messages=64)) == 1
    claims = [body.count(b"SET state = 'locked'") for body in posts.since(mark)]
    assert claims == [claim_pipelined.FIRST_CHUNK, 0]  # the claims, then the COMMIT


def test_a_receive_with_an_attempt_id_is_three_round_trips_its_replay_two(
    mq: EmbeddedClient, posts: Posts
) -> None:
    """The attempt's lookup (with BEGIN), the claims, then its record with the COMMIT
    (the Receiver gives every receive an attempt id)."""
    mq.send("q", _msgs(3))
    mark = len(posts.bodies)
    got = mq.receive("q", max_messages=3, attempt_id="a1")
    first = len(posts.since(mark))
    mark = len(posts.bodies)
    again = mq.receive("q", max_messages=3, attempt_id="a1")
    assert (first, len(posts.since(mark))) == (3, 2)
    assert [m.lock_token for m in again] == [m.lock_token for m in got] and len(got) == 3


def test_a_settlement_is_two_round_trips_an_abandon_too(mq: EmbeddedClient, posts: Posts) -> None:
    """The fenced statement's row count decides (one request, with BEGIN); its receipt
    travels with the COMMIT. An abandon's statement returns the state it left
    (dead-lettered?): no third request to read it (issue 27 section 5)."""
    mq.send("q", _msgs(4))
    got = mq.receive("q", max_messages=4)
    counts = []
    for m, settle in zip(got, ("complete", "reject", "defer", "abandon"), strict=True):
        mark = len(posts.bodies)
        getattr(mq, settle)("q", m.seq_number, m.lock_token)
        counts.append(len(posts.since(mark)))
    assert counts == [2, 2, 2, 2]
    stats = mq.stats("q")
    assert (stats.active, stats.deferred, stats.dead_lettered) == (1, 1, 1)


def test_a_call_refused_before_its_first_statement_was_sent_costs_no_round_trip(
    mq: EmbeddedClient, posts: Posts
) -> None:
    """Its BEGIN was still queued when it rolled back: the server never saw it."""
    mq.create_queue("g", QueueConfig(ordering_mode=OrderingMode.GROUP_FIFO))
    mark = len(posts.bodies)
    with pytest.raises(errors.GroupRequired):
        mq.send_one("g", OutMessage(body=b"no group"))
    assert posts.since(mark) == []


def test_a_failing_queued_write_fails_its_own_block_and_commits_nothing_of_it(
    mq: EmbeddedClient, remote_dsn: str
) -> None:
    """A send's INSERT is queued; the server refuses it (a trigger here) when the block's
    RELEASE carries it: that verb raises inside the outbox block, which goes on and
    commits the rest -- as on a local file, where the INSERT itself raises."""
    raw = RemoteConnection(parse_remote(remote_dsn), "")
    try:
        raw.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.body = X'626164' "
            "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        )
        with mq.tx() as tx:
            good = tx.send_one("q", OutMessage(body=b"good"))
            with pytest.raises(sqlite3.IntegrityError):  # as a local file raises it in tx()
                tx.send_one("q", OutMessage(body=b"bad"))
            after = tx.send_one("q", OutMessage(body=b"after"))
        with pytest.raises(errors.StorageError):
            mq.send_one("q", OutMessage(body=b"bad"))  # alone: its COMMIT carried it
        bodies = {m.seq_number: m.body for m in mq.peek("q", max=10)}
        assert bodies == {good: b"good", after: b"after"}
    finally:
        raw.close()


def test_a_lost_answer_of_a_commit_carrying_the_write_is_outcome_unknown_never_resent(
    sqld_server: Sqld, remote_dsn: str
) -> None:
    relay = StallProxy(sqld_server.port)
    mq = mqlite.open_embedded(relay.url, clock=FakeClock(T0), background=False)
    try:
        mq.create_queue("q", QueueConfig())
        conn = mq._engine.store.conn
        relay.cut(after=b"COMMIT")  # the server gets BEGIN, INSERT, COMMIT; no answer
        with pytest.raises(errors.OutcomeUnknown):
            mq.send_one("q", OutMessage(body=b"x"))
        assert conn.retries == 0  # never sent twice
        assert mq.stats("q").active == 1  # it did apply: exactly once
        assert not conn.in_transaction
        mq.send_one("q", OutMessage(body=b"y"))  # the store goes on
        assert mq.stats("q").active == 2
    finally:
        mq.close()
        relay.close()


@pytest.mark.parametrize("delete", [False, True])
def test_a_chunk_of_claims_that_crosses_the_byte_budget_claims_only_what_the_loop_would(
    mq: EmbeddedClient, posts: Posts, monkeypatch: pytest.MonkeyPatch, delete: bool
) -> None:
    """The claims go 64 to a request; a chunk that crossed the budget before its end is
    rolled back and claimed one by one: exactly the messages up to the one that crossed,
    the rest left claimable (not locked until their lease expires)."""
    mq.send("q", _msgs(10))
    unit = encoded_size(mq.peek("q", max=1)[0]) + 64  # a claimed one has its lock token
    monkeypatch.setattr(defaults, "RESPONSE_BYTE_BUDGET", int(2.5 * unit))
    mode = "receive_and_delete" if delete else "peek_lock"
    got = mq.receive("q", max_messages=10, mode=mode)
    assert len(got) == 3
    stats = mq.stats("q")
    assert (stats.active, stats.locked) == (7, 0 if delete else 3)


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("BEGIN IMMEDIATE", (BEGIN, "")),
        ("COMMIT", (COMMIT, "")),
        ("ROLLBACK", (ROLLBACK, "")),
        ("SAVEPOINT sp1", (SAVEPOINT, "sp1")),
        ("RELEASE sp1", (RELEASE, "sp1")),
        ("ROLLBACK TO sp_claims", (ROLLBACK_TO, "sp_claims")),
        # The caller's own savepoints (tx.execute) are sent as written, never queued.
        ("SAVEPOINT mine", (OTHER, "")),
        ("ROLLBACK TO mine", (OTHER, "")),
        ("SELECT 1", (OTHER, "")),
    ],
)
def test_only_the_engines_own_control_statements_are_queued(
    sql: str, kind: tuple[int, str]
) -> None:
    assert classify(sql) == kind

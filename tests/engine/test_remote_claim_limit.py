"""A queue of large bodies on a real sqld with a small response limit: the pipelined
claim's chunk whose answer is over the limit is undone once, and later Receives ask for
fewer claims per request instead of undoing a full chunk every time (claim_pipelined.py).
Round trips are counted around every ``HttpConnection.post`` (as
test_remote_round_trips.py does), never timed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig
from mqlite.clock import FakeClock
from mqlite.engine import http1
from mqlite.sdk.embedded import EmbeddedClient
from sqld_harness import Sqld, sqld_binary

BODY = b"b" * 50_000  # ~67 KB a row in Hrana's JSON (base64): 4 rows are over 200 KB
UNDO = b"ROLLBACK TO sp_claims"


@pytest.fixture
def posts(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    seen: list[bytes] = []
    post = http1.HttpConnection.post

    def counted(self: http1.HttpConnection, head: bytes, body: bytes) -> tuple[int, bytes]:
        seen.append(body)
        return post(self, head, body)

    monkeypatch.setattr(http1.HttpConnection, "post", counted)
    return seen


@pytest.fixture
def mq(tmp_path: Path) -> Iterator[EmbeddedClient]:
    server = Sqld(sqld_binary(), tmp_path / "data", "--max-response-size", "200KB").start()
    try:
        client = mqlite.open_embedded(server.url, clock=FakeClock(), background=False)
        client.create_queue("big", QueueConfig())
        yield client
        client.close()
    finally:
        server.stop()


def test_a_chunk_over_the_response_limit_lowers_the_queues_chunk_for_later_receives(
    mq: EmbeddedClient, posts: list[bytes]
) -> None:
    for _ in range(6):
        mq.send("big", [OutMessage(BODY)] * 8)
    undone, trips = [], []
    for _ in range(6):
        mark = len(posts)
        got = mq.receive("big", max_messages=8, mode="receive_and_delete")
        assert len(got) == 8 and all(m.body == BODY for m in got)
        undone.append(sum(UNDO in body for body in posts[mark:]))
        trips.append(len(posts) - mark)
    # 8 claims per request: over the limit, undone; 4: still over, undone; 2 fit. From
    # then on no chunk is undone and a Receive of 8 is 4 requests of 2 plus its commit.
    assert undone == [1, 1, 0, 0, 0, 0], (undone, trips)
    assert trips[2:] == [5] * 4, trips
    assert trips[0] > 3 * trips[2], trips  # the undone chunk, then one claim per request
    assert mq.stats("big").total == 0

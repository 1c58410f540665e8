"""Remote-only behaviour: credentials and permissions, long polls, keep-alive reuse,
threads sharing one client, and the asyncio client against the real broker."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest
from sdk_support import Broker

import mqlite
import mqlite.aio
from mqlite import OutMessage, errors

Names = Callable[..., str]


def test_send_only_key_is_permission_denied_elsewhere(
    remote: mqlite.HttpClient, broker: Broker, names: Names
) -> None:
    q = names()
    remote.create_queue(q)
    key_id = mqlite.generate_key_id()
    _, token = remote.create_key(key_id, "producer", ["send"])
    with mqlite.connect(broker.url, token) as producer:
        assert producer.send_one(q, OutMessage(b"x")) > 0
        for call in (
            lambda: producer.receive(q),
            lambda: producer.peek(q),
            lambda: producer.stats(q),
            lambda: producer.list_queues(),
            lambda: producer.create_key(mqlite.generate_key_id(), "k", ["send"]),
        ):
            with pytest.raises(errors.PermissionDenied):
                call()
        remote.revoke_key(key_id)
        with pytest.raises(errors.Unauthenticated):
            producer.send_one(q, OutMessage(b"x"))


def test_bad_or_missing_token_is_unauthenticated(broker: Broker) -> None:
    for token in (None, "wrong"):
        with mqlite.connect(broker.url, token) as c, pytest.raises(errors.Unauthenticated):
            c.list_queues()


def test_token_in_an_mqlite_url(broker: Broker) -> None:
    port = broker.url.rsplit(":", 1)[1]
    with mqlite.connect(f"mqlite://{broker.token}@127.0.0.1:{port}") as c:
        assert isinstance(c.list_queues(), list)


def test_long_poll_outlasts_the_request_timeout(broker: Broker, names: Names) -> None:
    q = names()
    with mqlite.connect(broker.url, broker.token, timeout=0.3) as c:
        c.create_queue(q)
        started = time.monotonic()
        assert c.receive(q, wait_ms=800) == []
        assert 0.7 < time.monotonic() - started < 5


def test_long_poll_is_woken_by_a_send(remote: mqlite.HttpClient, names: Names) -> None:
    q = names()
    remote.create_queue(q)
    timer = threading.Timer(0.2, lambda: remote.send_one(q, OutMessage(b"wake")))
    started = time.monotonic()
    timer.start()
    [m] = remote.receive(q, wait_ms=10_000)
    assert m.body == b"wake" and time.monotonic() - started < 5
    m.complete()


def test_keep_alive_reuses_one_connection(remote: mqlite.HttpClient, names: Names) -> None:
    q = names()
    remote.create_queue(q)
    for _ in range(20):
        remote.send_one(q, OutMessage(b"x"))
    assert len(remote._pool._idle) == 1


def test_one_client_shared_by_threads(remote: mqlite.HttpClient, names: Names) -> None:
    q = names()
    remote.create_queue(q)
    seqs: list[int] = []
    lock = threading.Lock()

    def produce() -> None:
        for i in range(50):
            seq = remote.send_one(q, OutMessage(str(i).encode()))
            with lock:
                seqs.append(seq)

    threads = [threading.Thread(target=produce) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seqs)) == 400 and remote.stats(q).active == 400
    assert len(remote._pool._idle) <= 8


def test_aio_client_end_to_end(broker: Broker, names: Names) -> None:
    q, missing = names(), names("missing")

    async def main() -> None:
        async with mqlite.aio.connect(broker.url, broker.token) as mq:
            info = await mq.create_queue(q)
            assert info.name == q and info.generation
            seqs = await asyncio.gather(*(mq.send_one(q, OutMessage(b"%d" % i)) for i in range(20)))
            assert len(set(seqs)) == 20
            got = await mq.receive(q, max_messages=20)
            assert sorted(m.seq_number for m in got) == sorted(seqs)
            assert all(isinstance(m, mqlite.aio.AsyncMessage) for m in got)
            first, second, third = got[0], got[1], got[2]
            assert await first.renew() >= first.locked_until_ms
            await first.complete()
            await first.complete()  # exact replay
            with pytest.raises(errors.LockLost):
                await first.abandon()
            await second.reject("r", "d")
            await third.defer()
            results = await mq.complete_batch(q, [(m.seq_number, m.lock_token) for m in got[3:]])
            assert all(r.ok for r in results)
            [dl] = await mq.peek(q, state="dead_lettered")
            assert isinstance(dl, mqlite.Message) and dl.dead_letter_reason == "r"
            [d] = await mq.receive_deferred(q, [third.seq_number])
            await d.complete()
            assert (await mq.stats(q)).total == 1
            with pytest.raises(errors.QueueNotFound):
                await mq.stats(missing)
            with pytest.raises(errors.InvalidArgument):
                await mq.receive(q, mode="bogus")
            [m] = await mq.receive(q, mode="receive_and_delete") or [None]
            assert m is None or m.lock_token == ""
            started = time.monotonic()
            assert await mq.receive(q, wait_ms=300) == []
            assert time.monotonic() - started >= 0.25
            st = await mq.status()
            assert st.auth is True
            key_id = mqlite.generate_key_id()
            key, token = await mq.create_key(key_id, "aio", ["listen"])
            assert token.startswith("mqk_") and key.id == key_id
            await mq.revoke_key(key_id)
        with pytest.raises(errors.Closed):
            await mq.list_queues()

    asyncio.run(main())


def test_aio_wrapper_of_an_unlocked_message_refuses_to_settle() -> None:
    m = mqlite.aio.AsyncMessage(mqlite.Message(1, queue="q"), None)
    with pytest.raises(errors.InvalidArgument):
        asyncio.run(m.complete())
    assert (m.seq_number, m.queue, m.body) == (1, "q", b"")
    assert m == mqlite.aio.AsyncMessage(mqlite.Message(1, queue="q"), None)

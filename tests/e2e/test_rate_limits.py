"""Per-key rate limits on a real ``mqlite serve`` over loopback (issue 35 "Rate limits"):
429 ``resource_exhausted`` with ``Retry-After``, a Send paying per message, the broker
default, the metric, and the SDK honouring ``Retry-After``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from e2e_support import ADMIN_TOKEN, Broker, BrokerFactory, b64

import mqlite
from mqlite import OutMessage, RetryPolicy, errors

BOUND = 50  # every loop below is bounded: a limit that never bites fails, never hangs


@pytest.fixture(scope="module")
def rbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    factory = BrokerFactory(tmp_path_factory.mktemp("rate"))
    try:
        b = factory({"MQLITE_KEY_RATE_LIMIT": "1000/1000"}, ["--metrics"])
        b.create_queue("rq")
        yield b
    finally:
        factory.teardown()


def _key(
    b: Broker, rate: int, burst: int, perms: tuple[str, ...] = ("send", "listen")
) -> tuple[str, str]:
    key_id = uuid.uuid4().hex
    body = {
        "id": key_id,
        "name": "limited",
        "permissions": list(perms),
        "rate_limit_per_s": rate,
        "burst": burst,
    }
    return key_id, b.ok("AuthService/CreateKey", body)["token"]


def _send(b: Broker, token: str, n: int = 1):  # type: ignore[no-untyped-def]
    msgs = [{"body": b64("x")}] * n
    return b.rpc("QueueService/Send", {"queue": "rq", "messages": msgs}, token=token)


def test_over_the_limit_is_429_with_retry_after(rbroker: Broker) -> None:
    key_id, token = _key(rbroker, 1, 3)
    statuses = []
    for _ in range(BOUND):
        r = _send(rbroker, token)
        statuses.append(r.status_code)
        if r.status_code != 200:
            break
    assert statuses[:3] == [200, 200, 200] and statuses[-1] == 429, statuses
    assert r.json()["code"] == "resource_exhausted" and r.json()["retry_after_s"] >= 1
    assert r.headers["retry-after"] == str(r.json()["retry_after_s"])
    assert "rate limit" in r.json()["message"] and token not in r.text
    # a receive costs one and is refused the same way
    r = rbroker.rpc("QueueService/Receive", {"queue": "rq"}, token=token)
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    # administrator tokens are never limited
    for _ in range(5):
        assert _send(rbroker, ADMIN_TOKEN).status_code == 200
    metrics = rbroker.http.get("/metrics").text
    assert f'mqlite_rate_limited_total{{key_id="{key_id}"}} 2' in metrics
    assert token not in metrics
    codes = rbroker.http.get("/metrics").text
    assert 'code="resource_exhausted"' in codes


def test_a_send_pays_for_each_of_its_messages(rbroker: Broker) -> None:
    # The refill is 1/s: a loaded machine that takes a second between the two sends has
    # rightly refilled one message, so such a round (on a fresh key) is run again and the
    # check is on one whose two sends fit the second (issue 25: no test depends on speed).
    tried = []
    for _ in range(10):
        _, token = _key(rbroker, 1, 5)
        started = time.monotonic()
        assert _send(rbroker, token, 5).status_code == 200  # the whole burst at once
        before = rbroker.ok("QueueService/Stats", {"queue": "rq"})
        r = _send(rbroker, token, 1)
        took = time.monotonic() - started
        if took < 1.0:
            assert r.status_code == 429, took
            after = rbroker.ok("QueueService/Stats", {"queue": "rq"})
            assert after["active"] == before["active"]  # nothing was sent
            return
        tried.append(round(took, 2))
    pytest.fail(f"no round of two sends fit in one second: {tried}")


def test_a_key_without_its_own_limit_gets_the_broker_default(rbroker: Broker) -> None:
    _, token = _key(rbroker, 0, 0)
    for _ in range(20):  # far below the default 1000/s burst 1000
        assert _send(rbroker, token).status_code == 200


def test_the_broker_default_limits_keys_without_their_own(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_KEY_RATE_LIMIT": "1/2"}, [])
    b.create_queue("rq")
    # Three sends within a second: the burst of 2, then refused. A loaded machine can take
    # longer, and then the bucket has rightly refilled: such a round (on a fresh key) is
    # run again, and the check is on one that fit the second (issue 25).
    tried = []
    for _ in range(10):
        _, token = _key(b, 0, 0)
        started = time.monotonic()
        statuses = [_send(b, token).status_code for _ in range(3)]
        took = time.monotonic() - started
        if took < 1.0:
            assert statuses == [200, 200, 429], (statuses, took)
            return
        assert statuses[:2] == [200, 200], statuses
        tried.append(round(took, 2))
    pytest.fail(f"no round of three sends fit in one second: {tried}")


def test_the_sdk_waits_out_retry_after_and_succeeds(rbroker: Broker) -> None:
    _, token = _key(rbroker, 1, 1)
    with mqlite.connect(rbroker.base_url, token) as c:
        c.send_one("rq", OutMessage(b"a"))
        started = time.monotonic()
        c.send_one("rq", OutMessage(b"b"))  # 429 first, then retried after Retry-After
        assert time.monotonic() - started >= 0.9


def test_the_sdk_caps_its_wait_and_then_surfaces_the_429(rbroker: Broker) -> None:
    _, token = _key(rbroker, 1, 1)
    policy = RetryPolicy(attempts=2, max_retry_after_ms=50)
    with mqlite.connect(rbroker.base_url, token, retry=policy) as c:
        c.send_one("rq", OutMessage(b"a"))
        started = time.monotonic()
        with pytest.raises(errors.ResourceExhausted) as info:
            c.send_one("rq", OutMessage(b"b"))
        assert time.monotonic() - started < 0.9  # capped at 50 ms, not the broker's 1 s
        assert info.value.retry_after_s >= 1 and info.value.http_status == 429


def test_the_async_sdk_waits_out_retry_after(rbroker: Broker) -> None:
    import asyncio

    import mqlite.aio

    _, token = _key(rbroker, 1, 1)

    async def main() -> float:
        async with mqlite.aio.connect(rbroker.base_url, token) as c:
            await c.send_one("rq", OutMessage(b"a"))
            started = time.monotonic()
            await c.send_one("rq", OutMessage(b"b"))
            return time.monotonic() - started

    assert asyncio.run(main()) >= 0.9

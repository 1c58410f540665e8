"""Push delivery in a real ``mqlite serve`` (docs/push.md): the verbs over HTTP, Receive
refused with 409 queue_has_push, loopback refused by default, and at-least-once across a
SIGKILL of the broker in the middle of a POST -- the message comes again after restart
with the same ``webhook-id``, and nothing is lost."""

from __future__ import annotations

import threading
import time
from typing import Any

from e2e_support import BrokerFactory, b64, kill_group
from push_support import Got, Receiver, verify

ALLOW = {"MQLITE_PUSH_ALLOW_NETWORKS": "127.0.0.0/8"}


def test_the_verbs_over_http_and_receive_refused(
    broker_factory: BrokerFactory, receiver: Receiver
) -> None:
    b = broker_factory(ALLOW)
    q = b.create_queue("orders")
    created = b.ok("AdminService/CreatePush", {"queue": q, "url": receiver.url()})["push"]
    secret = created["secret"]
    assert secret.startswith("whsec_")
    listed = b.ok("AdminService/ListPushes")["pushes"]
    assert [p["queue"] for p in listed] == [q] and listed[0]["secret"] == ""
    msg = b.err("QueueService/Receive", {"queue": q}, 409, "name_conflict", reason="queue_has_push")
    assert "push target" in msg
    b.send(q, "hello")
    (got,) = receiver.wait_for(1)
    assert got.body == b"hello" and verify(secret, got.headers, got.body)
    bad = {"queue": q, "url": receiver.url(), "max_in_flight": 0}
    assert "max_in_flight" in b.err("AdminService/CreatePush", bad, 400, "invalid_argument")
    assert b.ok("AdminService/DeletePush", {"queue": q}) == {"deleted": True}
    assert b.receive(q) == []
    assert secret not in b.stdout() + b.stderr()  # never logged


def test_loopback_is_refused_by_default(broker_factory: BrokerFactory, receiver: Receiver) -> None:
    b = broker_factory()
    q = b.create_queue()
    for url in (receiver.url(), "https://[::ffff:127.0.0.1]/h", "https://169.254.169.254/"):
        msg = b.err("AdminService/CreatePush", {"queue": q, "url": url}, 400, "invalid_argument")
        assert "egress guard" in msg
    assert b.ok("AdminService/ListPushes")["pushes"] == []


def test_a_sigkill_mid_post_redelivers_with_the_same_webhook_id(
    broker_factory: BrokerFactory, receiver: Receiver
) -> None:
    b = broker_factory(ALLOW)
    q = b.create_queue("k", lock_duration_ms=60_000)
    release = threading.Event()

    def hold_the_first(g: Got, _: Any) -> tuple[int, dict[str, str], bytes] | None:
        if g.headers["mqlite-delivery-count"] == "1" and g.body == b"m0":
            release.wait(30)  # the broker dies while this POST is open
        return (204, {}, b"")

    receiver.behave(hold_the_first)
    b.ok("AdminService/CreatePush", {"queue": q, "url": receiver.url(), "max_in_flight": 1})
    seqs = b.ok(
        "QueueService/Send", {"queue": q, "messages": [{"body": b64(f"m{i}")} for i in range(5)]}
    )["seq_numbers"]
    (first,) = receiver.wait_for(1)
    assert first.body == b"m0"
    kill_group(b.proc)
    b.proc.wait(timeout=10)
    b.close_clients()
    release.set()
    again = broker_factory(ALLOW, db_path=b.db_path)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done = {g.headers["webhook-id"] for g in receiver.got if g.headers["mqlite-delivery-count"]}
        if done >= {f"{q}:{s}" for s in seqs} and len(receiver.got) >= 6:
            break
        time.sleep(0.05)
    retried = [g for g in receiver.got[1:] if g.body == b"m0"]
    assert retried, [g.body for g in receiver.got]
    assert retried[0].headers["webhook-id"] == first.headers["webhook-id"] == f"{q}:{seqs[0]}"
    assert int(retried[0].headers["mqlite-delivery-count"]) == 2
    assert sorted({g.body for g in receiver.got}) == [f"m{i}".encode() for i in range(5)]
    deadline = time.monotonic() + 10
    while (
        again.ok("QueueService/Stats", {"queue": q}).get("total", 0) and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert again.ok("QueueService/Stats", {"queue": q}).get("total", 0) == 0

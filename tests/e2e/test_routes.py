"""Every route of a real ``mqlite serve`` over real HTTP: a happy path and its error codes.

Spec: mqlite-docs.md api-reference (routes, "Errors", "Size limits", discovery card),
original-behaviour.md §8 (routes, strict decoding, error mapping, limits).
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from typing import Any

import httpx
import pytest
from e2e_support import (
    ADMIN_TOKEN,
    E2E_STORE,
    RPC,
    Broker,
    BrokerFactory,
    assert_error,
    b64,
    now_ms,
    scaled,
    unique,
)

import route_registry
from mqlite import defaults

MiB = 1 << 20
JSON_TYPE = {"Content-Type": "application/json"}

# The original's 22 routes in registration order (original-behaviour §8 "Routes"); every
# route the card must list comes from the wire table (tests/route_registry.py).
ORIGINAL_ORDER = route_registry.ORIGINAL_22
ALL_RPCS = route_registry.ALL

CARD_KEYS = {"name", "description", "version", "status", "auth", "docs", "endpoints", "health"}
CARD_KEYS |= {"ui"}  # the console, on by default (MQLITE_UI)


# -- open endpoints ---------------------------------------------------------------------


def test_discovery_card_exact_keys(broker: Broker) -> None:
    r = httpx.get(broker.base_url + "/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    card = r.json()
    assert set(card) == CARD_KEYS  # no `metrics` when metrics are off; the console is on
    assert card["name"] == "mqlite"
    assert card["status"] == "ok"
    assert card["auth"] == "bearer"
    assert card["health"] == "/healthz"
    assert card["description"] == (
        "Lightweight SQLite-backed message queue with Azure Service Bus-style semantics."
    )
    assert isinstance(card["version"], str) and card["version"]
    endpoints = card["endpoints"]
    assert sorted(endpoints) == sorted(RPC + r for r in ALL_RPCS)
    assert len(endpoints) == len(set(endpoints))
    originals = [e for e in endpoints if e[len(RPC) :] in ORIGINAL_ORDER]
    assert originals == [RPC + r for r in ORIGINAL_ORDER]


def test_discovery_card_docs_field_is_the_project_url(broker: Broker) -> None:
    """api-reference "Open endpoints" example and original-behaviour §8 "Discovery card":
    ``docs`` = "https://github.com/mqlitehq/mqlite"."""
    card = httpx.get(broker.base_url + "/").json()
    assert card["docs"] == "https://github.com/mqlitehq/mqlite"


def test_discovery_endpoints_are_all_served(broker: Broker) -> None:
    """Every advertised path is a live POST route (never the unknown-path 404)."""
    card = httpx.get(broker.base_url + "/").json()
    for path in card["endpoints"]:
        r = broker.http.post(path, content=b"not json", headers=JSON_TYPE)
        assert r.status_code == 400, (path, r.status_code, r.text)
        assert r.json()["code"] == "invalid_argument"


def test_discovery_card_with_metrics_on(broker_factory: BrokerFactory) -> None:
    b = broker_factory(args=["--metrics"])
    card = httpx.get(b.base_url + "/").json()
    assert set(card) == CARD_KEYS | {"metrics"}
    assert card["metrics"] == "/metrics"
    r = b.http.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    assert "mqlite_queue_messages" in r.text or "# HELP" in r.text


def test_metrics_route_404_when_disabled(broker: Broker) -> None:
    r = broker.http.get("/metrics")
    assert_error(r, 404, "not_found")


def test_healthz(broker: Broker) -> None:
    r = httpx.get(broker.base_url + "/healthz")
    assert r.status_code == 200
    assert r.text.strip() == "ok"


def test_healthz_answers_any_method_without_auth(broker: Broker) -> None:
    """original-behaviour §8 "Routes": "Non-RPC (any method): `/healthz` → 200 text `ok`";
    api-reference: `/healthz` is an open endpoint (§8 "Auth header parsing": exempt)."""
    for method in ("POST", "HEAD", "PUT"):
        r = httpx.request(method, broker.base_url + "/healthz")
        assert r.status_code == 200, (method, r.status_code, r.text)
    assert httpx.post(broker.base_url + "/healthz").text.strip() == "ok"


def test_openapi_document(broker: Broker) -> None:
    r = httpx.get(broker.base_url + "/openapi.json")  # open: no token
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    doc = r.json()
    assert doc["openapi"].startswith("3.1")
    card = httpx.get(broker.base_url + "/").json()
    for path in card["endpoints"]:
        assert "post" in doc["paths"][path], path


# -- QueueService happy paths -----------------------------------------------------------


def test_send_and_receive_roundtrip(broker: Broker) -> None:
    q = broker.create_queue()
    out = broker.ok(
        "QueueService/Send",
        {
            "queue": q,
            "messages": [
                {
                    "body": b64("hello"),
                    "message_id": "m1",
                    "subject": "orders.eu",
                    "properties": {"k": "v"},
                },
                {"body": b64("world")},
            ],
        },
    )
    seqs = out["seq_numbers"]
    assert len(seqs) == 2 and 0 < seqs[0] < seqs[1]
    msgs = broker.receive(q, 10)
    assert [m["seq_number"] for m in msgs] == seqs
    first = msgs[0]
    assert base64.b64decode(first["body"]) == b"hello"
    assert first["message_id"] == "m1"
    assert first["subject"] == "orders.eu"
    assert first["properties"] == {"k": "v"}
    assert first["delivery_count"] == 1
    assert first["lock_token"]
    assert first["locked_until_ms"] > first["enqueued_at_ms"] > 0
    assert "state" not in first  # Receive never shows state (§8 message views)


def test_send_empty_body_is_allowed_and_omitted(broker: Broker) -> None:
    q = broker.create_queue()
    broker.ok("QueueService/Send", {"queue": q, "messages": [{}]})
    (m,) = broker.receive(q)
    assert "body" not in m  # omitted when empty


def test_receive_and_delete(broker: Broker) -> None:
    q = broker.create_queue()
    broker.send(q, "x")
    (m,) = broker.receive(q, receive_mode=1)
    assert "lock_token" not in m and "locked_until_ms" not in m
    assert broker.ok("QueueService/Stats", {"queue": q})["total"] == 0


def test_receive_empty_queue_returns_empty_list(broker: Broker) -> None:
    q = broker.create_queue()
    out = broker.ok("QueueService/Receive", {"queue": q})
    assert out == {"messages": []}


def test_complete_and_replay_and_lock_lost(broker: Broker) -> None:
    q = broker.create_queue()
    broker.send(q, "a")
    (m,) = broker.receive(q)
    body = {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]}
    assert broker.ok("QueueService/Complete", body) == {"ok": True}
    # The exact same request replays from its settlement receipt.
    assert broker.ok("QueueService/Complete", body) == {"ok": True}
    broker.send(q, "b")
    (m2,) = broker.receive(q)
    wrong = {"queue": q, "seq_number": m2["seq_number"], "lock_token": "not-the-token"}
    broker.err("QueueService/Complete", wrong, 409, "lock_lost")


def test_complete_batch(broker: Broker) -> None:
    q = broker.create_queue()
    broker.send(q, "a", "b")
    msgs = broker.receive(q, 2)
    items = [{"seq_number": m["seq_number"], "lock_token": m["lock_token"]} for m in msgs]
    items.append({"seq_number": msgs[0]["seq_number"] + 1000, "lock_token": "stale"})
    out = broker.ok("QueueService/CompleteBatch", {"queue": q, "messages": items})
    assert [r["ok"] for r in out["results"]] == [True, True, False]
    assert [r["seq_number"] for r in out["results"]] == [i["seq_number"] for i in items]


def test_renew_batch_and_cap(broker: Broker) -> None:
    q = broker.create_queue()
    broker.send(q, "a")
    (m,) = broker.receive(q)
    items = [{"seq_number": m["seq_number"], "lock_token": m["lock_token"]}]
    out = broker.ok("QueueService/RenewBatch", {"queue": q, "messages": items})
    (res,) = out["results"]
    assert res["ok"] is True and res["locked_until_ms"] >= m["locked_until_ms"]
    too_many = [{"seq_number": i + 1, "lock_token": "t"} for i in range(513)]
    broker.err(
        "QueueService/RenewBatch", {"queue": q, "messages": too_many}, 400, "invalid_argument"
    )


def test_abandon_redelivers(broker: Broker) -> None:
    q = broker.create_queue()
    broker.send(q, "a")
    (m,) = broker.receive(q)
    body = {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]}
    assert broker.ok("QueueService/Abandon", body) == {"ok": True}
    (again,) = broker.receive(q)
    assert again["seq_number"] == m["seq_number"] and again["delivery_count"] == 2


def test_reject_dead_letters(broker: Broker) -> None:
    q = broker.create_queue()
    broker.send(q, "a")
    (m,) = broker.receive(q)
    body = {
        "queue": q,
        "seq_number": m["seq_number"],
        "lock_token": m["lock_token"],
        "dead_letter_reason": "Bad",
        "dead_letter_description": "because",
    }
    assert broker.ok("QueueService/Reject", body) == {"ok": True}
    (p,) = broker.ok("QueueService/Peek", {"queue": q, "state": "dead_lettered"})["messages"]
    assert p["state"] == "dead_lettered"
    assert p["dead_letter_reason"] == "Bad" and p["dead_letter_description"] == "because"
    assert "lock_token" not in p  # Peek never shows a lock token


def test_defer_and_receive_deferred(broker: Broker) -> None:
    q = broker.create_queue()
    (seq,) = broker.send(q, "a")
    (m,) = broker.receive(q)
    body = {"queue": q, "seq_number": seq, "lock_token": m["lock_token"]}
    assert broker.ok("QueueService/Defer", body) == {"ok": True}
    assert broker.ok("QueueService/Receive", {"queue": q}) == {"messages": []}
    (p,) = broker.ok("QueueService/Peek", {"queue": q, "state": "deferred"})["messages"]
    assert p["seq_number"] == seq
    out = broker.ok("QueueService/ReceiveDeferred", {"queue": q, "seq_numbers": [seq]})
    (d,) = out["messages"]
    assert d["seq_number"] == seq and d["lock_token"]


def test_renew_and_lock_lost(broker: Broker) -> None:
    q = broker.create_queue()
    broker.send(q, "a")
    (m,) = broker.receive(q)
    body = {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]}
    assert broker.ok("QueueService/Renew", body) == {"ok": True}
    broker.err("QueueService/Renew", {**body, "lock_token": "nope"}, 409, "lock_lost")


def test_schedule_and_cancel(broker: Broker) -> None:
    q = broker.create_queue()
    at = now_ms() + 3_600_000
    out = broker.ok(
        "QueueService/Schedule",
        {"queue": q, "messages": [{"body": b64("later")}], "scheduled_enqueue_time_ms": at},
    )
    (seq,) = out["seq_numbers"]
    (p,) = broker.ok("QueueService/Peek", {"queue": q, "state": "scheduled"})["messages"]
    assert p["seq_number"] == seq and p["visible_at_ms"] == at
    assert broker.ok("QueueService/Cancel", {"queue": q, "seq_number": seq}) == {"ok": True}
    broker.err("QueueService/Cancel", {"queue": q, "seq_number": seq}, 404, "not_found")


def test_send_with_schedule_in_the_past_is_400(broker: Broker) -> None:
    q = broker.create_queue()
    body = {"queue": q, "messages": [{"body": b64("x")}], "scheduled_enqueue_time_ms": 1000}
    broker.err("QueueService/Send", body, 400, "invalid_argument")


def test_peek_and_stats(broker: Broker) -> None:
    q = broker.create_queue()
    broker.send(q, "a", "b", "c")
    broker.receive(q)
    out = broker.ok("QueueService/Peek", {"queue": q, "max": 2})
    assert len(out["messages"]) == 2
    assert {m["state"] for m in out["messages"]} <= {"active", "locked"}
    stats = broker.ok("QueueService/Stats", {"queue": q})
    assert set(stats) == {
        "queue",
        "active",
        "locked",
        "deferred",
        "scheduled",
        "dead_lettered",
        "total",
        "oldest_message_age_ms",
    }
    assert stats["queue"] == q
    assert (stats["active"], stats["locked"], stats["total"]) == (2, 1, 3)


# -- AdminService happy paths -----------------------------------------------------------


def test_create_queue_upsert_and_list(broker: Broker) -> None:
    q = broker.create_queue(lock_duration_ms=60_000, max_delivery_count=5)
    broker.create_queue(q, lock_duration_ms=45_000)  # idempotent upsert
    queues = broker.ok("AdminService/ListQueues")["queues"]
    (info,) = [x for x in queues if x["name"] == q]
    assert info["kind"] == "queue"
    assert info["lock_duration_ms"] == 45_000
    assert info["generation"]
    assert {"max_delivery_count", "default_ttl_ms", "dedup_window_ms"} <= set(info)


def test_ensure_queue_creates_once_and_never_resets(broker: Broker) -> None:
    q = unique()
    first = broker.ok(
        "AdminService/EnsureQueue", {"name": q, "config": {"dedup_window_ms": 600_000}}
    )
    assert (first["created"], first["differs"]) == (True, [])
    assert first["queue"]["dedup_window_ms"] == 600_000 and first["queue"]["generation"]
    again = broker.ok("AdminService/EnsureQueue", {"name": q})
    assert (again["created"], again["differs"]) == (False, ["dedup_window_ms"])
    assert again["queue"] == first["queue"]  # left exactly as it was
    broker.err(
        "AdminService/EnsureQueue",
        {"name": q, "strict": True},
        409,
        "name_conflict",
        reason="queue_config_differs",
    )
    same = broker.ok(
        "AdminService/EnsureQueue",
        {"name": q, "config": {"dedup_window_ms": 600_000}, "strict": True},
    )
    assert (same["created"], same["differs"]) == (False, [])


def test_list_queues_and_status_accept_an_empty_body(broker: Broker) -> None:
    for method in (
        "AdminService/ListQueues",
        "AdminService/ListSubscriptions",
        "AdminService/Status",
    ):
        r = broker.rpc(method, content=b"")
        assert r.status_code == 200, (method, r.text)


def test_delete_queue(broker: Broker) -> None:
    q = broker.create_queue()
    gen = _generation(broker, q)
    broker.send(q, "x")
    broker.err("AdminService/DeleteQueue", {"name": q, "generation": gen}, 409, "queue_not_empty")
    broker.receive(q, receive_mode=1)
    broker.err(
        "AdminService/DeleteQueue", {"name": q, "generation": gen + "x"}, 409, "queue_changed"
    )
    broker.err("AdminService/DeleteQueue", {"name": q}, 400, "invalid_argument")
    out = broker.ok("AdminService/DeleteQueue", {"name": q, "generation": gen})
    assert out == {"deleted": True}
    broker.err("AdminService/DeleteQueue", {"name": q, "generation": gen}, 404, "not_found")
    broker.err("QueueService/Stats", {"queue": q}, 404, "not_found")


def _generation(broker: Broker, name: str) -> str:
    (info,) = [x for x in broker.ok("AdminService/ListQueues")["queues"] if x["name"] == name]
    return str(info["generation"])


def test_subscribe_fanout_list_and_unsubscribe(broker: Broker) -> None:
    topic, eu, us = unique("t"), unique("eu"), unique("us")
    assert broker.ok("AdminService/Subscribe", {"topic": topic, "name": eu}) == {}
    f = {"expr": 'subject == "us"'}
    assert broker.ok("AdminService/Subscribe", {"topic": topic, "name": us, "filter": f}) == {}
    subs = broker.ok("AdminService/ListSubscriptions")["subscriptions"]
    mine = [s for s in subs if s["topic"] == topic]
    assert {s["name"]: s.get("expr", "") for s in mine} == {eu: "", us: 'subject == "us"'}
    broker.ok("QueueService/Send", {"queue": topic, "messages": [{"subject": "eu"}]})
    assert broker.ok("QueueService/Stats", {"queue": eu})["total"] == 1
    assert broker.ok("QueueService/Stats", {"queue": us})["total"] == 0
    assert broker.ok("AdminService/Unsubscribe", {"topic": topic, "name": us}) == {}
    subs = broker.ok("AdminService/ListSubscriptions")["subscriptions"]
    assert [s["name"] for s in subs if s["topic"] == topic] == [eu]


def test_subscribe_bad_expr_is_400(broker: Broker) -> None:
    body = {"topic": unique("t"), "name": unique("s"), "filter": {"expr": "subject == ("}}
    broker.err("AdminService/Subscribe", body, 400, "invalid_argument")


def test_name_conflicts(broker: Broker) -> None:
    topic, sub = unique("t"), unique("s")
    broker.ok("AdminService/Subscribe", {"topic": topic, "name": sub})
    # A plain create over a subscription's backing queue.
    broker.err("AdminService/CreateQueue", {"name": sub}, 409, "name_conflict")
    # A plain create over a live topic.
    broker.err("AdminService/CreateQueue", {"name": topic}, 409, "name_conflict")
    # topic == name.
    n = unique("same")
    broker.err("AdminService/Subscribe", {"topic": n, "name": n}, 409, "name_conflict")
    # A topic naming an existing queue.
    q = broker.create_queue()
    broker.err("AdminService/Subscribe", {"topic": q, "name": unique("s")}, 409, "name_conflict")


def test_test_filter(broker: Broker) -> None:
    out = broker.ok(
        "AdminService/TestFilter",
        {"expr": 'subject == "a"', "message": {"subject": "a", "body": b64("x")}},
    )
    assert out == {"valid": True, "ran": True, "matched": True}
    out = broker.ok("AdminService/TestFilter", {"expr": 'subject == "a"'})
    assert out == {"valid": True, "ran": False, "matched": False}
    out = broker.ok("AdminService/TestFilter", {"expr": "subject == ("})
    assert out["valid"] is False and out["error"]


def test_redrive_and_purge(broker: Broker) -> None:
    q = broker.create_queue()
    broker.send(q, "a", "b", "c")
    for m in broker.receive(q, 3):
        broker.ok(
            "QueueService/Reject",
            {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
        )
    assert broker.ok("AdminService/Redrive", {"queue": q, "max": 1}) == {"moved": 1}
    assert broker.ok("QueueService/Stats", {"queue": q})["active"] == 1
    assert broker.ok("AdminService/Purge", {"queue": q}) == {"purged": 2}
    assert broker.ok("QueueService/Stats", {"queue": q})["dead_lettered"] == 0


def test_status(broker: Broker) -> None:
    st = broker.ok("AdminService/Status", {})
    assert set(st) == {
        "version",
        "backend",
        "remote",
        "location",
        "schema_version",
        "ping_ms",
        "db_size_bytes",
        "queues",
        "subscriptions",
        "uptime_ms",
        "auth",
    }
    if E2E_STORE == "libsql":  # a sqld of its own (MQLITE_E2E_STORE): no file to measure
        assert st["backend"] == "remote libSQL/Turso" and st["remote"] is True
        assert st["location"].startswith("http://***:") and st["db_size_bytes"] == 0
    else:
        assert st["backend"] == "local file" and st["remote"] is False
        assert st["db_size_bytes"] > 0
    assert st["auth"] is True and st["uptime_ms"] >= 0
    assert ADMIN_TOKEN not in repr(st)


def test_status_ping_ms_is_an_integer(broker: Broker) -> None:
    """The OpenAPI document (and the Go wire type it mirrors) says ``ping_ms`` is an
    integer number of milliseconds; the api-reference conventions: ``*_ms`` are integers."""
    st = broker.ok("AdminService/Status", {})
    assert isinstance(st["ping_ms"], int), st["ping_ms"]


# -- AuthService happy paths ------------------------------------------------------------


def test_create_list_revoke_key(broker: Broker) -> None:
    key_id = "0" * 31 + "1"
    out = broker.ok(
        "AuthService/CreateKey",
        {"id": key_id, "name": "worker", "permissions": ["send", "listen"]},
    )
    assert out["token"].startswith("mqk_") and len(out["token"]) == 68
    key = out["key"]
    assert key["id"] == key_id and key["name"] == "worker"
    assert sorted(key["permissions"]) == ["listen", "send"]
    assert key["created_at_ms"] > 0
    assert "expires_at_ms" not in key and "revoked_at_ms" not in key
    assert out["token"] not in repr(broker.ok("AuthService/ListKeys", {}))
    # Duplicate id: 409 key_conflict, no secret returned.
    r = broker.rpc(
        "AuthService/CreateKey", {"id": key_id, "name": "again", "permissions": ["send"]}
    )
    assert_error(r, 409, "key_conflict")
    assert "mqk_" not in r.text
    assert broker.ok("AuthService/RevokeKey", {"id": key_id}) == {"ok": True}
    assert broker.ok("AuthService/RevokeKey", {"id": key_id}) == {"ok": True}  # again: ok
    keys = broker.ok("AuthService/ListKeys", {"limit": 1000})["keys"]
    (mine,) = [k for k in keys if k["id"] == key_id]
    assert mine["revoked_at_ms"] > 0


def test_manage_permission_normalised(broker: Broker) -> None:
    out = broker.ok(
        "AuthService/CreateKey",
        {"id": "f" * 32, "name": "boss", "permissions": ["send", "manage"]},
    )
    assert out["key"]["permissions"] == ["manage"]


def test_list_keys_pagination_both_sorts(broker_factory: BrokerFactory) -> None:
    b = broker_factory()
    ids = [f"{i:032x}" for i in (3, 1, 4, 2, 5)]
    for key_id in ids:  # created in this order
        b.ok("AuthService/CreateKey", {"id": key_id, "name": "k", "permissions": ["send"]})
    # id_asc (the default), two per page.
    seen: list[str] = []
    after = ""
    for _ in range(10):
        body: dict[str, Any] = {"limit": 2}
        if after:
            body["after_id"] = after
        page = b.ok("AuthService/ListKeys", body)
        seen += [k["id"] for k in page["keys"]]
        if "next_after_id" not in page:
            break
        after = page["next_after_id"]
    assert seen == sorted(ids)
    # created_desc: newest first.
    seen, after = [], ""
    for _ in range(10):
        body = {"limit": 2, "sort": "created_desc"}
        if after:
            body["after_id"] = after
        page = b.ok("AuthService/ListKeys", body)
        seen += [k["id"] for k in page["keys"]]
        if "next_after_id" not in page:
            break
        after = page["next_after_id"]
    assert len(seen) == 5 and set(seen) == set(ids)
    created = {k["id"]: k["created_at_ms"] for k in b.ok("AuthService/ListKeys", {})["keys"]}
    assert seen == sorted(ids, key=lambda i: (created[i], i), reverse=True)
    # Unknown created_desc cursor / unsupported sort / limit over 1000: 400.
    b.err(
        "AuthService/ListKeys",
        {"sort": "created_desc", "after_id": "e" * 32},
        400,
        "invalid_argument",
    )
    b.err("AuthService/ListKeys", {"sort": "name"}, 400, "invalid_argument")
    b.err("AuthService/ListKeys", {"limit": 1001}, 400, "invalid_argument")
    # id_asc accepts a valid id that is not present.
    page = b.ok("AuthService/ListKeys", {"after_id": f"{0:032x}", "limit": 1})
    assert [k["id"] for k in page["keys"]] == [f"{1:032x}"]


def test_create_key_rejects_a_past_expiry(broker: Broker) -> None:
    body = {"id": "a" * 32, "name": "n", "permissions": ["send"], "expires_at_ms": 1}
    broker.err("AuthService/CreateKey", body, 400, "invalid_argument")


# -- 400 invalid_argument ---------------------------------------------------------------


def test_malformed_json(broker: Broker) -> None:
    broker.err("QueueService/Send", None, 400, "invalid_argument", content=b'{"queue":')


def test_unknown_field_top_level_and_at_depth(broker: Broker) -> None:
    q = broker.create_queue()
    msg = broker.err(
        "QueueService/Send", {"queue": q, "messages": [], "qeueu": 1}, 400, "invalid_argument"
    )
    assert "qeueu" in msg
    msg = broker.err(
        "AdminService/CreateQueue",
        {"name": unique(), "config": {"lock_duration": 5}},
        400,
        "invalid_argument",
    )
    assert "lock_duration" in msg
    msg = broker.err(
        "QueueService/Send",
        {"queue": q, "messages": [{"body": b64("x")}, {"bodyy": b64("y")}]},
        400,
        "invalid_argument",
    )
    assert "bodyy" in msg
    msg = broker.err(
        "AdminService/Subscribe",
        {"topic": unique("t"), "name": unique("s"), "filter": {"exp": "true"}},
        400,
        "invalid_argument",
    )
    assert "exp" in msg
    # Nothing was enqueued by the rejected requests.
    assert broker.ok("QueueService/Stats", {"queue": q})["total"] == 0


def test_trailing_data(broker: Broker) -> None:
    q = broker.create_queue()
    body = json.dumps({"queue": q}).encode() + b"{}"
    msg = broker.err("QueueService/Stats", None, 400, "invalid_argument", content=body)
    assert "unexpected data after JSON body" in msg
    broker.err(
        "QueueService/Stats",
        None,
        400,
        "invalid_argument",
        content=json.dumps({"queue": q}).encode() + b" x",
    )


def test_wrong_types(broker: Broker) -> None:
    q = broker.create_queue()
    cases: list[tuple[str, Any]] = [
        ("QueueService/Send", {"queue": 1, "messages": []}),
        ("QueueService/Send", {"queue": q, "messages": {}}),
        ("QueueService/Send", {"queue": q, "messages": [{"body": 5}]}),
        ("QueueService/Send", {"queue": q, "messages": [{"body": "***not base64***"}]}),
        ("QueueService/Send", {"queue": q, "messages": [{"properties": {"k": 1}}]}),
        ("QueueService/Receive", {"queue": q, "max_messages": "1"}),
        ("QueueService/Receive", {"queue": q, "wait_time_ms": 1.5}),
        ("AdminService/CreateQueue", {"name": q, "config": {"dead_letter_on_expire": "yes"}}),
        ("QueueService/Stats", [q]),
        ("QueueService/Stats", "queue"),
        ("QueueService/Stats", None),
    ]
    for method, body in cases:
        r = broker.rpc(method, body)
        assert_error(r, 400, "invalid_argument")


def test_empty_body(broker: Broker) -> None:
    broker.err("QueueService/Send", None, 400, "invalid_argument", content=b"")
    broker.err("QueueService/Receive", None, 400, "invalid_argument", content=b"  \n")


def test_missing_required_field(broker: Broker) -> None:
    msg = broker.err("QueueService/Send", {"messages": []}, 400, "invalid_argument")
    assert "queue" in msg


def test_negative_values(broker: Broker) -> None:
    q = broker.create_queue()
    m = [{"body": b64("x")}]
    cases: list[tuple[str, dict[str, Any]]] = [
        ("QueueService/Send", {"queue": q, "messages": m, "ttl_ms": -1}),
        ("QueueService/Send", {"queue": q, "messages": m, "scheduled_enqueue_time_ms": -5}),
        ("AdminService/Purge", {"queue": q, "max": -1}),
        ("AdminService/Redrive", {"queue": q, "older_than_ms": -1}),
        ("AdminService/CreateQueue", {"name": unique(), "config": {"lock_duration_ms": -1}}),
        ("AuthService/ListKeys", {"limit": -1}),
    ]
    for method, body in cases:
        r = broker.rpc(method, body)
        assert_error(r, 400, "invalid_argument")
    assert broker.ok("QueueService/Stats", {"queue": q})["total"] == 0


def test_bad_enums(broker: Broker) -> None:
    q = broker.create_queue()
    cases: list[tuple[str, dict[str, Any]]] = [
        ("AdminService/CreateQueue", {"name": unique(), "config": {"kind": "topic"}}),
        ("AdminService/CreateQueue", {"name": unique(), "config": {"ordering_mode": "fifo"}}),
        ("QueueService/Receive", {"queue": q, "receive_mode": 2}),
        ("AuthService/CreateKey", {"id": "b" * 32, "name": "n", "permissions": ["monitor"]}),
    ]
    for method, body in cases:
        r = broker.rpc(method, body)
        assert_error(r, 400, "invalid_argument")


def test_receive_and_peek_limits_clamp(broker: Broker) -> None:
    """original-behaviour §5: max_messages ≤0 → 1, >256 → 256; wait_time_ms <0 → 0,
    >20000 → 20000; §5 Peek: max ≤0 → 32, >1000 → 1000."""
    q = broker.create_queue()
    broker.ok("QueueService/Send", {"queue": q, "messages": [{}] * 1001})
    out = broker.ok("QueueService/Peek", {"queue": q, "max": 5000})
    assert len(out["messages"]) == 1000
    out = broker.ok("QueueService/Peek", {"queue": q, "max": -1})
    assert len(out["messages"]) == 32
    out = broker.ok("QueueService/Receive", {"queue": q, "max_messages": -1, "wait_time_ms": -1})
    assert len(out["messages"]) == 1
    body = {"queue": q, "max_messages": 300, "wait_time_ms": 20_001}
    assert len(broker.ok("QueueService/Receive", body)["messages"]) == 256


def test_empty_queue_name(broker: Broker) -> None:
    broker.err("AdminService/CreateQueue", {"name": ""}, 400, "invalid_argument")


def test_group_required(broker: Broker) -> None:
    q = broker.create_queue(ordering_mode="group_fifo")
    broker.err(
        "QueueService/Send", {"queue": q, "messages": [{"body": b64("x")}]}, 400, "group_required"
    )
    broker.ok("QueueService/Send", {"queue": q, "messages": [{"body": b64("x"), "group_id": "g"}]})


# -- 401 / 403 / 404 / 405 --------------------------------------------------------------


def test_401_without_token(broker: Broker) -> None:
    q = broker.create_queue()
    msg = broker.err("QueueService/Stats", {"queue": q}, 401, "unauthenticated", token=None)
    assert "Bearer" in msg


def test_403_permission_denied(broker: Broker) -> None:
    q = broker.create_queue()
    _, send_only = broker.create_key(["send"])
    broker.err("QueueService/Receive", {"queue": q}, 403, "permission_denied", token=send_only)


def test_404_unknown_queue(broker: Broker) -> None:
    """An unknown queue is not_found plus the machine-readable reason queue_not_found."""
    missing = unique("missing")
    send = {"queue": missing, "messages": [{"body": b64("x")}]}
    broker.err("QueueService/Send", send, 404, "not_found", reason="queue_not_found")
    broker.err(
        "QueueService/Receive", {"queue": missing}, 404, "not_found", reason="queue_not_found"
    )
    broker.err("QueueService/Stats", {"queue": missing}, 404, "not_found", reason="queue_not_found")
    broker.err("AdminService/Purge", {"queue": missing}, 404, "not_found", reason="queue_not_found")
    q = broker.create_queue()
    # A missing message in a queue that exists is plain not_found: no reason.
    broker.err("QueueService/Cancel", {"queue": q, "seq_number": 1}, 404, "not_found", reason="")


def test_unknown_path_401_first_then_404(broker: Broker) -> None:
    for path in ("/x", "/mqlite.v1.QueueService/Nope", "/mqlite.v1.Nope/Send", "/healthz/x"):
        assert_error(broker.anon.post(path, json={}), 401, "unauthenticated")
        assert_error(broker.anon.get(path), 401, "unauthenticated")
        msg = assert_error(broker.http.post(path, json={}), 404, "not_found", reason="")
        assert msg == f"no such path: {path}"
        msg = assert_error(broker.http.get(path), 404, "not_found")
        assert msg == f"no such path: {path}"


def test_405_get_on_rpc(broker: Broker) -> None:
    for path in (RPC + "QueueService/Send", RPC + "AdminService/ListQueues"):
        r = broker.http.get(path)
        msg = assert_error(r, 405, "unimplemented")
        assert "POST" in msg
        for method in ("PUT", "DELETE", "PATCH"):
            assert_error(broker.http.request(method, path, json={}), 405, "unimplemented")
        # Auth is checked first: without a token the wrong method is a 401.
        assert_error(broker.anon.get(path), 401, "unauthenticated")


# -- 409 --------------------------------------------------------------------------------


def test_409_already_exists_single_send_dedup_conflict(broker: Broker) -> None:
    q = broker.create_queue(dedup_window_ms=60_000)
    one = {"queue": q, "messages": [{"body": b64("a"), "message_id": "id-1"}]}
    (seq,) = broker.ok("QueueService/Send", one)["seq_numbers"]
    assert broker.ok("QueueService/Send", one)["seq_numbers"] == [seq]  # same body: collapses
    conflict = {"queue": q, "messages": [{"body": b64("b"), "message_id": "id-1"}]}
    broker.err("QueueService/Send", conflict, 409, "already_exists")
    # In a batch the conflicting slot is 0 while the rest commit.
    batch = {
        "queue": q,
        "messages": [{"body": b64("b"), "message_id": "id-1"}, {"body": b64("c")}],
    }
    seqs = broker.ok("QueueService/Send", batch)["seq_numbers"]
    assert seqs[0] == 0 and seqs[1] > seq


# -- 413 --------------------------------------------------------------------------------


def test_413_message_over_max_message_bytes(broker: Broker) -> None:
    q = broker.create_queue()  # the shared broker runs with MQLITE_MAX_MESSAGE_BYTES=4096
    at_cap = {"queue": q, "messages": [{"body": b64(b"x" * 4096)}]}
    broker.ok("QueueService/Send", at_cap)
    over = {"queue": q, "messages": [{"body": b64(b"y")}, {"body": b64(b"x" * 4097)}]}
    broker.err("QueueService/Send", over, 413, "message_too_large")
    assert broker.ok("QueueService/Stats", {"queue": q})["total"] == 1  # whole request refused


def _read_response(sock: socket.socket, deadline_s: float) -> bytes:
    sock.settimeout(deadline_s)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return head + b"\r\n\r\n" + rest
    except (TimeoutError, ConnectionError):
        return data


def _status_and_body(raw: bytes) -> tuple[int, bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head else 0
    return status, body


def test_413_declared_request_over_32_mib_refused_before_the_body(broker: Broker) -> None:
    """Content-Length 33 MiB, only 64 KiB actually sent: the 413 arrives anyway."""
    q = broker.create_queue()
    length = 33 * MiB
    head = (
        f"POST {RPC}QueueService/Send HTTP/1.1\r\n"
        f"Host: {broker.host}:{broker.port}\r\n"
        f"Authorization: Bearer {broker.token}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()
    with socket.create_connection((broker.host, broker.port), timeout=10) as sock:
        sock.sendall(head + b'{"queue":"' + q.encode() + b'","messages":[' + b" " * 65536)
        raw = _read_response(sock, 10)
    status, body = _status_and_body(raw)
    assert status == 413, raw[:300]
    assert b'"message_too_large"' in body


def test_413_streamed_request_over_32_mib(broker: Broker) -> None:
    """No Content-Length (chunked): refused once more than 32 MiB has arrived."""
    q = broker.create_queue()
    got: list[bytes] = []
    with socket.create_connection((broker.host, broker.port), timeout=30) as sock:
        head = (
            f"POST {RPC}QueueService/Send HTTP/1.1\r\n"
            f"Host: {broker.host}:{broker.port}\r\n"
            f"Authorization: Bearer {broker.token}\r\n"
            "Content-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        ).encode()
        sock.sendall(head)
        reader = threading.Thread(target=lambda: got.append(_read_response(sock, 30)))
        reader.start()
        chunk = b" " * MiB
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        first = b'{"queue":"' + q.encode() + b'","messages":['
        try:
            sock.sendall(f"{len(first):x}\r\n".encode() + first + b"\r\n")
            for _ in range(40):
                if got:
                    break
                sock.sendall(frame)
        except OSError:
            pass  # the broker stopped reading after its cap: expected
        reader.join(30)
    assert got, "no response"
    status, body = _status_and_body(got[0])
    assert status == 413, got[0][:300]
    assert b'"message_too_large"' in body


def test_keep_alive_connection_reused(broker: Broker) -> None:
    """Many requests on one keep-alive client succeed (sanity for the client fixture)."""
    q = broker.create_queue()
    t0 = time.monotonic()
    for i in range(50):
        broker.send(q, str(i))
    assert broker.ok("QueueService/Stats", {"queue": q})["total"] == 50
    assert time.monotonic() - t0 < scaled(20.0)  # idle: 20 s; a loaded machine, longer


def test_receive_attempt_id_replays_the_same_batch(broker: Broker) -> None:
    q = broker.create_queue()
    broker.send(q, "a", "b")
    first = broker.receive(q, 2, receive_attempt_id="attempt-1")
    again = broker.receive(q, 2, receive_attempt_id="attempt-1")
    assert [(m["seq_number"], m["lock_token"]) for m in first] == [
        (m["seq_number"], m["lock_token"]) for m in again
    ]


@pytest.mark.parametrize("ctype", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_rpcs_require_a_json_content_type(broker: Broker, ctype: str | None) -> None:
    """A CORS simple request (text/plain, a form; no preflight) never reaches an RPC."""
    q = broker.create_queue()
    headers = {"Content-Type": ctype} if ctype else {}
    r = broker.http.post(
        RPC + "QueueService/Stats", content=json.dumps({"queue": q}).encode(), headers=headers
    )
    assert_error(r, 415, "invalid_argument", reason="unsupported_media_type")


def test_a_json_content_type_may_carry_parameters(broker: Broker) -> None:
    q = broker.create_queue()
    r = broker.http.post(
        RPC + "QueueService/Stats",
        content=json.dumps({"queue": q}).encode(),
        headers={"Content-Type": "Application/JSON; charset=utf-8"},
    )
    assert r.status_code == 200 and r.json()["queue"] == q


def test_ui_paths_are_open_404s_when_the_console_is_off(broker_factory: BrokerFactory) -> None:
    """api-reference "Open endpoints": `/ui` is auth-exempt (original-behaviour §8 "Auth
    header parsing": exempt paths are exactly `/`, `/healthz`, `/ui` and the prefix
    `/ui/`); with MQLITE_UI=off it 404s for everyone and the card has no `ui`
    (the console itself: tests/e2e/test_console_routes.py)."""
    b = broker_factory({"MQLITE_UI": "off"})
    assert "ui" not in httpx.get(b.base_url + "/").json()
    for path in ("/ui", "/ui/", "/ui/index.html"):
        assert_error(httpx.get(b.base_url + path), 404, "not_found")


def test_delete_queue_wakes_a_parked_poll(broker: Broker) -> None:
    """api-reference DeleteQueue: "an existing long poll is woken"."""
    q = broker.create_queue()
    gen = _generation(broker, q)
    result: list[httpx.Response] = []

    def poll() -> None:
        with broker.client(broker.token) as c:
            result.append(
                c.post(RPC + "QueueService/Receive", json={"queue": q, "wait_time_ms": 10_000})
            )

    t = threading.Thread(target=poll, daemon=True)
    started = time.monotonic()
    t.start()
    time.sleep(0.6)
    assert broker.ok("AdminService/DeleteQueue", {"name": q, "generation": gen}) == {
        "deleted": True
    }
    t.join(10)
    assert result, "the poll did not return"
    assert time.monotonic() - started < 5.0, "the parked poll was not woken by the deletion"
    r = result[0]
    assert r.status_code in (200, 404), r.text
    if r.status_code == 200:
        assert r.json() == {"messages": []}


def test_dedup_window_above_its_maximum_is_400_naming_the_field_and_limit(broker: Broker) -> None:
    top = defaults.MAX_DEDUP_WINDOW_MS
    ok = unique()
    broker.ok("AdminService/CreateQueue", {"name": ok, "config": {"dedup_window_ms": top}})
    above = unique()
    body = {"name": above, "config": {"dedup_window_ms": top + 1}}
    msg = broker.err("AdminService/CreateQueue", body, 400, "invalid_argument")
    assert "dedup_window_ms" in msg and str(top) in msg, msg
    names = {q["name"] for q in broker.ok("AdminService/ListQueues", {})["queues"]}
    assert ok in names and above not in names


def test_null_is_absent_in_optional_fields_over_http(broker: Broker) -> None:
    """Issue 28: the proto3 JSON mapping, as the original's JavaScript/Go clients send it;
    a null where a value is required is still the 400 naming the field."""
    q = broker.create_queue()
    assert broker.ok("AdminService/CreateQueue", {"name": q, "config": None}) == {}
    msg = {"body": "aGk=", "group_id": None, "properties": None, "message_id": None}
    sent = broker.ok("QueueService/Send", {"queue": q, "messages": [msg], "ttl_ms": None})
    body = {"queue": q, "max_messages": None, "wait_time_ms": None, "receive_attempt_id": None}
    (got,) = broker.ok("QueueService/Receive", body)["messages"]
    assert (got["seq_number"], got["body"]) == (sent["seq_numbers"][0], "aGk=")
    assert "group_id" not in got and "properties" not in got
    message = broker.err("QueueService/Stats", {"queue": None}, 400, "invalid_argument")
    assert message == "queue: want string, got null"

"""The auth matrix of a real broker: 401 vs 403, managed keys, monitor tokens, auth off,
Bearer parsing, the generated token and what the logs may (never) contain.

Spec: mqlite-docs.md api-reference "Auth" + "Permissions" + "CreateKey / ListKeys /
RevokeKey", deployment "Configuration"; issue 4 "Auth, secure by default" and "JSON
request logs".
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from e2e_support import (
    ADMIN_TOKEN,
    RPC,
    Broker,
    BrokerFactory,
    assert_error,
    b64,
    now_ms,
    unique,
)

import route_registry

MONITOR_TOKEN = "mqk_e2e_monitor_" + "m" * 24

# One representative request per route, valid against a queue named {q} holding a
# message (the body may still fail later with 404/409: only 401/403 matter here).
# The lists come from the wire table (tests/route_registry.py): a new route joins the
# matrix by its declared permission, and needs only its harmless body in ``body_for``.
# Monitor routes (Observe) have their own matrix: tests/e2e/test_observe_routes.py.
SEND_ROUTES = route_registry.with_permission("send")
LISTEN_ROUTES = route_registry.with_permission("listen")
KEY_ROUTES = route_registry.of_service("AuthService")
MANAGE_ROUTES = [r for r in route_registry.with_permission("manage") if r not in KEY_ROUTES]
ALL_ROUTES = SEND_ROUTES + LISTEN_ROUTES + MANAGE_ROUTES + KEY_ROUTES


def body_for(route: str, q: str) -> dict[str, Any]:
    """A well-formed request for ``route`` that does no harm to ``q``."""
    method = route.split("/")[1]
    settle = {"queue": q, "seq_number": 999_999, "lock_token": "x"}
    return {
        "Send": {"queue": q, "messages": [{"body": b64("x")}]},
        "Schedule": {
            "queue": q,
            "messages": [{"body": b64("x")}],
            "scheduled_enqueue_time_ms": now_ms() + 3_600_000,
        },
        "Cancel": {"queue": q, "seq_number": 999_999},
        "Receive": {"queue": unique("empty-never-created")},
        "ReceiveDeferred": {"queue": q, "seq_numbers": [999_999]},
        "Peek": {"queue": q},
        "Stats": {"queue": q},
        "Complete": settle,
        "Abandon": settle,
        "Reject": settle,
        "Defer": settle,
        "Renew": settle,
        "CompleteBatch": {"queue": q, "messages": [{"seq_number": 999_999, "lock_token": "x"}]},
        "RenewBatch": {"queue": q, "messages": [{"seq_number": 999_999, "lock_token": "x"}]},
        "CreateQueue": {"name": q},
        "EnsureQueue": {"name": q},
        "CreateSchedule": {
            "name": unique("sched"),
            "cron": "@yearly",
            "queue": q,
            "message": {"body": b64("x")},
            "paused": True,
        },
        "DeleteSchedule": {"name": unique("absent-sched")},
        "ListSchedules": {},
        "ListAudit": {"queue": q, "limit": 1},
        # Paused, to a documentation address: nothing is ever POSTed.
        "CreatePush": {"queue": q, "url": "https://203.0.114.1/h", "paused": True},
        "DeletePush": {"queue": unique("absent-push")},
        "ListPushes": {},
        "DeleteQueue": {"name": unique("absent"), "generation": "g"},
        "Subscribe": {"topic": unique("t"), "name": unique("s")},
        "Unsubscribe": {"topic": unique("t"), "name": unique("s")},
        "ListQueues": {},
        "ListSubscriptions": {},
        "TestFilter": {"expr": "true"},
        "Redrive": {"queue": q},
        "Purge": {"queue": q, "max": 1},
        "Status": {},
        "CreateKey": {"id": _new_id(), "name": "k", "permissions": ["send"]},
        "ListKeys": {},
        "RevokeKey": {"id": "0" * 32},
    }[method]


_ids = iter(range(1, 1 << 30))


def _new_id() -> str:
    return f"{0xE2E << 100 | next(_ids):032x}"


def status_of(b: Broker, route: str, token: str | None, q: str) -> int:
    return b.rpc(route, body_for(route, q), token=token).status_code


@pytest.fixture(scope="module")
def mbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A broker with metrics on and a configured monitor token."""
    factory = BrokerFactory(tmp_path_factory.mktemp("auth"))
    try:
        yield factory({"MQLITE_MONITOR_TOKENS": MONITOR_TOKEN}, ["--metrics"])
    finally:
        factory.teardown()


# -- 401 --------------------------------------------------------------------------------


def test_no_token_and_wrong_token_are_401_everywhere(mbroker: Broker) -> None:
    q = mbroker.create_queue()
    for route in ALL_ROUTES:
        for token in (None, "wrong-token", ADMIN_TOKEN + "x", ADMIN_TOKEN[:-1]):
            r = mbroker.rpc(route, body_for(route, q), token=token)
            assert_error(r, 401, "unauthenticated")
    assert mbroker.anon.get("/metrics").status_code == 401


@pytest.mark.parametrize(
    "header",
    [
        ADMIN_TOKEN,  # bare token
        f"bearer {ADMIN_TOKEN}",  # lowercase scheme
        f"BEARER {ADMIN_TOKEN}",
        f"Basic {ADMIN_TOKEN}",
        f"Token {ADMIN_TOKEN}",
        f"Bearer  {ADMIN_TOKEN}",  # two spaces
        f"Bearer {ADMIN_TOKEN} extra",
        f"Bearer{ADMIN_TOKEN}",
        "Bearer",
        "",
    ],
)
def test_malformed_authorization_is_401(mbroker: Broker, header: str) -> None:
    r = httpx.post(
        mbroker.base_url + RPC + "AdminService/ListQueues",
        json={},
        headers={"Authorization": header},
    )
    assert_error(r, 401, "unauthenticated")


def test_duplicate_authorization_headers_are_401(mbroker: Broker) -> None:
    good = f"Bearer {ADMIN_TOKEN}"
    for pair in ((good, good), (good, "Bearer nope"), ("Bearer nope", good)):
        r = httpx.post(
            mbroker.base_url + RPC + "AdminService/ListQueues",
            json={},
            headers=[("Authorization", pair[0]), ("Authorization", pair[1])],
        )
        assert_error(r, 401, "unauthenticated")


def test_open_endpoints_need_no_token(mbroker: Broker) -> None:
    for path in ("/", "/healthz", "/openapi.json"):
        assert httpx.get(mbroker.base_url + path).status_code == 200
        # A bad credential on an open endpoint is ignored, not a 401.
        r = httpx.get(mbroker.base_url + path, headers={"Authorization": "Basic zzz"})
        assert r.status_code == 200


# -- managed keys: send / listen / manage -----------------------------------------------


def _matrix(b: Broker, token: str, allowed: set[str]) -> None:
    q = b.create_queue()
    b.send(q, "seed")
    for route in ALL_ROUTES:
        status = status_of(b, route, token, q)
        if route in allowed:
            assert status not in (401, 403), (route, status)
        else:
            assert status == 403, (route, status)
            r = b.rpc(route, body_for(route, q), token=token)
            message = assert_error(r, 403, "permission_denied")
            # For people: the wire word of the permission, never a Python enum repr.
            assert re.fullmatch(
                r"this credential lacks the (send|listen|manage) permission", message
            )


def test_send_only_key(mbroker: Broker) -> None:
    _, token = mbroker.create_key(["send"])
    _matrix(mbroker, token, set(SEND_ROUTES))
    assert mbroker.anon.get("/metrics", headers=_h(token)).status_code == 403


def test_listen_only_key(mbroker: Broker) -> None:
    _, token = mbroker.create_key(["listen"])
    _matrix(mbroker, token, set(LISTEN_ROUTES))
    assert mbroker.anon.get("/metrics", headers=_h(token)).status_code == 403


def test_send_and_listen_key(mbroker: Broker) -> None:
    _, token = mbroker.create_key(["send", "listen"])
    _matrix(mbroker, token, set(SEND_ROUTES) | set(LISTEN_ROUTES))


def test_manage_key_has_admin_rights(mbroker: Broker) -> None:
    _, token = mbroker.create_key(["manage"])
    _matrix(mbroker, token, set(ALL_ROUTES))
    assert mbroker.anon.get("/metrics", headers=_h(token)).status_code == 200
    # A manage key may issue new keys, which work on their own.
    out = mbroker.ok(
        "AuthService/CreateKey",
        {"id": _new_id(), "name": "child", "permissions": ["listen"]},
        token=token,
    )
    assert mbroker.rpc("QueueService/Stats", {"queue": "x"}, token=out["token"]).status_code in (
        200,
        404,
    )


def test_configured_admin_token_has_every_right(mbroker: Broker) -> None:
    _matrix(mbroker, ADMIN_TOKEN, set(ALL_ROUTES))
    assert mbroker.http.get("/metrics").status_code == 200


def test_send_only_key_end_to_end(mbroker: Broker) -> None:
    q = mbroker.create_queue()
    _, sender = mbroker.create_key(["send"])
    _, listener = mbroker.create_key(["listen"])
    mbroker.ok("QueueService/Send", {"queue": q, "messages": [{"body": b64("hi")}]}, token=sender)
    out = mbroker.ok("QueueService/Receive", {"queue": q}, token=listener)
    (m,) = out["messages"]
    settle = {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]}
    mbroker.err("QueueService/Complete", settle, 403, "permission_denied", token=sender)
    assert mbroker.ok("QueueService/Complete", settle, token=listener) == {"ok": True}


def _h(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# -- revocation and expiry --------------------------------------------------------------


def test_revocation_is_effective_on_the_next_request(mbroker: Broker) -> None:
    key_id, token = mbroker.create_key(["listen"])
    q = mbroker.create_queue()
    with mbroker.client(token) as c:  # one keep-alive connection across the revocation
        assert c.post(RPC + "QueueService/Stats", json={"queue": q}).status_code == 200
        assert mbroker.ok("AuthService/RevokeKey", {"id": key_id}) == {"ok": True}
        r = c.post(RPC + "QueueService/Stats", json={"queue": q})
        assert_error(r, 401, "unauthenticated")


def test_revoking_the_creator_does_not_revoke_issued_keys(mbroker: Broker) -> None:
    boss_id, boss = mbroker.create_key(["manage"])
    out = mbroker.ok(
        "AuthService/CreateKey",
        {"id": _new_id(), "name": "w", "permissions": ["send"]},
        token=boss,
    )
    mbroker.ok("AuthService/RevokeKey", {"id": boss_id})
    q = mbroker.create_queue()
    mbroker.ok("QueueService/Send", {"queue": q, "messages": [{}]}, token=out["token"])
    mbroker.err("AdminService/ListQueues", {}, 401, "unauthenticated", token=boss)


def test_expired_key_is_401(mbroker: Broker) -> None:
    expires = now_ms() + 1500
    _, token = mbroker.create_key(["listen"], expires_at_ms=expires)
    q = mbroker.create_queue()
    assert mbroker.rpc("QueueService/Stats", {"queue": q}, token=token).status_code == 200
    deadline = time.monotonic() + 10
    while now_ms() <= expires + 50 and time.monotonic() < deadline:
        time.sleep(0.1)
    r = mbroker.rpc("QueueService/Stats", {"queue": q}, token=token)
    assert_error(r, 401, "unauthenticated")
    # Expired and revoked records remain visible to managers.
    keys = mbroker.ok("AuthService/ListKeys", {"limit": 1000})["keys"]
    assert any(k.get("expires_at_ms") == expires for k in keys)


def test_configured_token_wins_over_its_managed_record(broker_factory: BrokerFactory) -> None:
    """api-reference "Permissions": placing a managed token in MQLITE_TOKENS grants it
    administrator rights independently of its database permissions or revocation."""
    first = broker_factory()
    key_id, token = first.create_key(["send"])
    first.ok("AuthService/RevokeKey", {"id": key_id})
    db = first.db_path
    assert first.stop() == 0
    second = broker_factory({"MQLITE_TOKENS": f"{ADMIN_TOKEN},{token}"}, db_path=db)
    assert second.rpc("AdminService/ListQueues", {}, token=token).status_code == 200
    assert second.rpc("AuthService/ListKeys", {}, token=token).status_code == 200
    # Every comma-separated configured token works.
    assert second.rpc("AdminService/ListQueues", {}, token=ADMIN_TOKEN).status_code == 200


# -- monitor credentials ----------------------------------------------------------------


def test_monitor_token_only_scrapes_metrics(mbroker: Broker) -> None:
    r = mbroker.anon.get("/metrics", headers=_h(MONITOR_TOKEN))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    q = mbroker.create_queue()
    for route in ALL_ROUTES:
        r = mbroker.rpc(route, body_for(route, q), token=MONITOR_TOKEN)
        assert_error(r, 403, "permission_denied")


def test_monitor_tokens_rejected_with_auth_off(broker_factory: BrokerFactory) -> None:
    proc, _, _, err, _, _ = broker_factory.spawn(
        {"MQLITE_TOKENS": "off", "MQLITE_MONITOR_TOKENS": MONITOR_TOKEN}
    )
    assert proc.wait(timeout=15) != 0
    assert "MQLITE_MONITOR_TOKENS" in err.read_text()


def test_monitor_token_must_differ_from_admin(broker_factory: BrokerFactory) -> None:
    proc, _, _, err, _, _ = broker_factory.spawn(
        {"MQLITE_TOKENS": ADMIN_TOKEN, "MQLITE_MONITOR_TOKENS": ADMIN_TOKEN}
    )
    assert proc.wait(timeout=15) != 0
    assert "MQLITE_MONITOR_TOKENS" in err.read_text()


def test_metrics_require_auth(broker_factory: BrokerFactory) -> None:
    proc, _, _, err, _, _ = broker_factory.spawn({"MQLITE_TOKENS": "off"}, ["--metrics"])
    assert proc.wait(timeout=15) != 0
    assert "METRICS" in err.read_text().upper()


# -- auth off ---------------------------------------------------------------------------


def test_auth_off(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_TOKENS": "off"}, token=None)
    card = httpx.get(b.base_url + "/").json()
    assert card["auth"] == "none"
    q = b.create_queue()
    b.send(q, "open")
    assert len(b.receive(q)) == 1
    # Any header (even garbage) is fine: the queue API is open.
    r = b.rpc("QueueService/Stats", {"queue": q}, token="garbage")
    assert r.status_code == 200
    for route in KEY_ROUTES:
        r = b.rpc(route, body_for(route, q), token=None)
        assert_error(r, 403, "permission_denied")
    assert b.ok("AdminService/Status", {})["auth"] is False
    # Unknown paths are a plain 404 (nothing to authenticate).
    assert_error(b.anon.get("/nope"), 404, "not_found")


# -- the generated token ----------------------------------------------------------------

TOKEN_RE = re.compile(r"mqk_[0-9a-f]{64}")


def test_generated_token_printed_once_and_never_logged(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_TOKENS": None}, token=None)
    deadline = time.monotonic() + 5
    while not TOKEN_RE.search(b.stdout()) and time.monotonic() < deadline:
        time.sleep(0.05)
    out = b.stdout()
    found = TOKEN_RE.findall(out)
    assert len(found) == 1, out
    token = found[0]
    assert re.search(rf"(?<![0-9a-f]){re.escape(token)}(?![0-9a-f])", out)
    assert_error(b.rpc("AdminService/ListQueues", {}, token=None), 401, "unauthenticated")
    assert b.rpc("AdminService/ListQueues", {}, token=token).status_code == 200
    assert b.rpc("AdminService/ListQueues", {}, token="mqk_" + "0" * 64).status_code == 401
    assert b.stop() == 0
    err = b.stderr()
    assert token not in err
    assert token[4:] not in err
    assert len(TOKEN_RE.findall(b.stdout())) == 1  # still once, also after shutdown


# -- request logs -----------------------------------------------------------------------


def test_request_logs_are_json_lines_without_tokens_or_bodies(
    broker_factory: BrokerFactory,
) -> None:
    b = broker_factory({"MQLITE_ACCESS_LOG": "all"})  # every request has its line
    q = b.create_queue()
    secret_body = "TOPSECRET-BODY-7f3a91"
    _, key_token = b.create_key(["send", "listen"])
    b.ok(
        "QueueService/Send",
        {"queue": q, "messages": [{"body": b64(secret_body), "message_id": "mid-1"}]},
        token=key_token,
    )
    b.ok("QueueService/Send", {"queue": q, "messages": [{}, {}, {}]})
    (m,) = b.receive(q)
    b.ok(
        "QueueService/Complete",
        {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
    )
    b.rpc("QueueService/Stats", {"queue": q}, token="wrong-" + ADMIN_TOKEN)
    b.rpc("QueueService/Stats", {"queue": unique("missing")})
    httpx.post(
        b.base_url + RPC + "AdminService/ListQueues",
        json={},
        headers={"Authorization": ADMIN_TOKEN},
    )
    assert b.stop() == 0
    err = b.stderr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    records = []
    for ln in lines:
        rec = json.loads(ln)  # every stderr line is one JSON object
        assert isinstance(rec, dict)
        records.append(rec)
    access = [r for r in records if "status" in r and "route" in r]
    by_route: dict[str, list[dict[str, Any]]] = {}
    for r in access:
        by_route.setdefault(r["route"], []).append(r)
    sends = by_route["QueueService/Send"]
    assert [r["status"] for r in sends] == [200, 200]
    assert all(r["queue"] == q for r in sends)
    assert sorted(r.get("n") for r in sends) == [1, 3]
    for r in access:
        assert isinstance(r.get("duration_ms"), int | float), r
    stats = by_route["QueueService/Stats"]
    assert sorted(r["status"] for r in stats) == [401, 404]
    assert by_route["AdminService/ListQueues"][-1]["status"] == 401
    assert by_route["QueueService/Receive"][0]["queue"] == q
    # Never a token, never a body (raw or base64), never a lock token.
    for needle in (
        ADMIN_TOKEN,
        ADMIN_TOKEN[4:],
        key_token,
        key_token[4:],
        secret_body,
        b64(secret_body),
        m["lock_token"],
    ):
        assert needle not in err, needle
    assert "Authorization" not in err and "Bearer" not in err.replace(
        "missing or invalid Bearer token", ""
    )


def test_empty_receive_logged_at_debug_only(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_ACCESS_LOG": "all"})
    q = b.create_queue()
    assert b.receive(q) == []
    b.send(q, "x")
    assert len(b.receive(q)) == 1
    assert b.stop() == 0
    recs = [json.loads(ln) for ln in b.stderr().splitlines() if ln.strip()]
    receives = [r for r in recs if r.get("route") == "QueueService/Receive"]
    assert len(receives) == 1 and receives[0]["n"] == 1  # the empty one is below INFO

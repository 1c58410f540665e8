"""Key scopes on a real broker (issue 35): every RPC of the wire table x {unscoped,
in-scope, out-of-scope} x {send, listen, manage}, extending the auth matrix of
``test_auth``, plus what a scope means: ListQueues filtered, a subscription reached through
its topic, no 404 oracle outside the scope, a scoped manage key confined to its scope.

Spec: issue 35 "Scoped keys"; docs/http.md "Key scopes".
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_support import Broker, BrokerFactory, assert_error, b64
from test_auth import body_for

from mqlite import wire
from mqlite.server.auth import NAMED_QUEUE_ROUTES, QUEUE_FIELDS, SCOPE_FILTERED, UNSCOPED_ONLY

# Routes that need more than the route's own permission: key management is manage-only.
PERMISSION_OF = {r.name: r.permission.value for r in wire.ROUTES}
ROUTES = [r.name for r in wire.ROUTES]
PERMS = ("send", "listen", "manage")


def holds(perm: str, route: str) -> bool:
    """Whether a key with ``perm`` holds the route's permission (manage holds all)."""
    return perm == "manage" or PERMISSION_OF[route] == perm


def scoped_body(route: str, prefix: str) -> dict[str, Any]:
    """``test_auth``'s harmless request for ``route``, every queue name under ``prefix``."""
    body = dict(body_for(route, prefix + "q")) if route.split("/")[1] != "Observe" else {}
    fields = (*QUEUE_FIELDS, "name") if route in NAMED_QUEUE_ROUTES else QUEUE_FIELDS
    for field in fields:
        if isinstance(body.get(field), str) and not body[field].startswith(prefix):
            body[field] = prefix + body[field]
    return body


def names_a_queue(route: str, prefix: str) -> bool:
    body = scoped_body(route, prefix)
    fields = (*QUEUE_FIELDS, "name") if route in NAMED_QUEUE_ROUTES else QUEUE_FIELDS
    return any(body.get(f) for f in fields)


@pytest.fixture(scope="module")
def sbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    factory = BrokerFactory(tmp_path_factory.mktemp("scopes"))
    try:
        b = factory({}, [])
        b.create_queue("in.q")
        b.send("in.q", "x")
        b.create_queue("out.q")
        b.send("out.q", "x")
        yield b
    finally:
        factory.teardown()


def test_the_matrix_covers_every_route_of_the_wire_table() -> None:
    for route in ROUTES:
        scoped_body(route, "in.")  # a KeyError here: give the new route a body in test_auth
    assert {"AdminService/Observe", "AuthService/CreateKey"} <= set(ROUTES)


@pytest.mark.parametrize("perm", PERMS)
def test_scope_matrix_every_route(sbroker: Broker, perm: str) -> None:
    """unscoped: only the permission decides; in-scope: a queue route is allowed, a
    broker-wide one refused (keys, Status, Observe), a filtered list allowed; out-of-scope:
    every queue route 403 naming the queue, never 404."""
    _, unscoped = sbroker.create_key([perm])
    _, scoped = sbroker.create_key([perm], queues=["in.*"])
    for route in ROUTES:
        for case, token, prefix in (
            ("unscoped", unscoped, "in."),
            ("unscoped-out", unscoped, "out."),
            ("in-scope", scoped, "in."),
            ("out-of-scope", scoped, "out."),
        ):
            r = sbroker.rpc(route, scoped_body(route, prefix), token=token)
            where = (perm, case, route, r.status_code, r.text)
            if route.startswith("AuthService/"):
                # key management: unscoped manage only
                if perm == "manage" and case.startswith("unscoped"):
                    assert r.status_code not in (401, 403), where
                else:
                    assert_error(r, 403, "permission_denied")
                continue
            if not holds(perm, route):
                assert_error(r, 403, "permission_denied")
                assert "permission" in r.json()["message"], where
                continue
            if case.startswith("unscoped"):
                assert r.status_code not in (401, 403), where
            elif route in UNSCOPED_ONLY:  # the audit trail: broker-wide, like keys
                message = assert_error(r, 403, "permission_denied")
                assert "not scoped" in message, where
            elif not names_a_queue(route, prefix):
                if route in SCOPE_FILTERED:
                    assert r.status_code not in (401, 403), where
                else:
                    message = assert_error(r, 403, "permission_denied")
                    assert "not scoped" in message, where
            elif case == "in-scope":
                assert r.status_code not in (401, 403), where
            else:
                message = assert_error(r, 403, "permission_denied")
                assert "'out." in message, where  # names the queue


def test_unknown_queue_outside_the_scope_is_403_not_404(sbroker: Broker) -> None:
    _, token = sbroker.create_key(["send", "listen"], queues=["in.*"])
    ghost = "out.never-" + uuid.uuid4().hex[:8]
    for route, body in (
        ("QueueService/Send", {"queue": ghost, "messages": [{"body": b64("x")}]}),
        ("QueueService/Receive", {"queue": ghost}),
        ("QueueService/Peek", {"queue": ghost}),
        ("QueueService/Stats", {"queue": ghost}),
    ):
        message = sbroker.err(route, body, 403, "permission_denied", token=token)
        assert ghost in message
    # inside the scope the same unknown name is an honest 404
    sbroker.err("QueueService/Stats", {"queue": "in.never"}, 404, "not_found", token=token)


def test_scoped_key_sends_and_receives_inside_its_scope(sbroker: Broker) -> None:
    _, token = sbroker.create_key(["send", "listen"], queues=["in.exact", "in.team/*"])
    for q in ("in.exact", "in.team/a"):
        sbroker.create_queue(q)
        sbroker.ok("QueueService/Send", {"queue": q, "messages": [{"body": b64("m")}]}, token=token)
        got = sbroker.ok("QueueService/Receive", {"queue": q, "receive_mode": 1}, token=token)
        assert [m["body"] for m in got["messages"]] == [b64("m")]
    sbroker.create_queue("in.exactly")  # an exact pattern is not a prefix
    sbroker.err(
        "QueueService/Stats", {"queue": "in.exactly"}, 403, "permission_denied", token=token
    )


def test_list_queues_shows_a_scoped_key_only_its_queues(sbroker: Broker) -> None:
    _, token = sbroker.create_key(["manage"], queues=["in.*"])
    names = [q["name"] for q in sbroker.ok("AdminService/ListQueues", {}, token=token)["queues"]]
    assert names and all(n.startswith("in.") for n in names)
    assert "out.q" in [q["name"] for q in sbroker.ok("AdminService/ListQueues", {})["queues"]]


def test_a_subscription_matches_through_its_topic_or_its_own_name(sbroker: Broker) -> None:
    sbroker.ok("AdminService/Subscribe", {"topic": "in.topic", "name": "billing-sub"})
    sbroker.ok("AdminService/Subscribe", {"topic": "out.topic", "name": "in.own-sub"})
    sbroker.ok("AdminService/Subscribe", {"topic": "out.topic", "name": "other-sub"})
    _, token = sbroker.create_key(["send", "listen"], queues=["in.*"])
    sbroker.ok(
        "QueueService/Send", {"queue": "in.topic", "messages": [{"body": b64("t")}]}, token=token
    )
    got = sbroker.ok(
        "QueueService/Receive", {"queue": "billing-sub", "receive_mode": 1}, token=token
    )
    assert len(got["messages"]) == 1  # through its topic
    sbroker.ok("QueueService/Stats", {"queue": "in.own-sub"}, token=token)  # its own name
    sbroker.err("QueueService/Stats", {"queue": "other-sub"}, 403, "permission_denied", token=token)
    sbroker.err(
        "QueueService/Send",
        {"queue": "out.topic", "messages": [{"body": b64("t")}]},
        403,
        "permission_denied",
        token=token,
    )
    _, manage = sbroker.create_key(["manage"], queues=["in.*"])
    subs = sbroker.ok("AdminService/ListSubscriptions", {}, token=manage)["subscriptions"]
    assert {s["name"] for s in subs} >= {"billing-sub", "in.own-sub"}
    assert "other-sub" not in {s["name"] for s in subs}


def test_a_scoped_manage_key_manages_only_inside_its_scope(sbroker: Broker) -> None:
    _, token = sbroker.create_key(["manage"], queues=["in.*"])
    sbroker.ok("AdminService/CreateQueue", {"name": "in.made"}, token=token)
    sbroker.err(
        "AdminService/CreateQueue", {"name": "out.made"}, 403, "permission_denied", token=token
    )
    # a new subscription must be named inside the scope, under a topic inside it
    sbroker.ok("AdminService/Subscribe", {"topic": "in.t2", "name": "in.s2"}, token=token)
    for topic, name in (("in.t2", "out.s2"), ("out.t2", "in.s3")):
        body = {"topic": topic, "name": name}
        sbroker.err("AdminService/Subscribe", body, 403, "permission_denied", token=token)
    # Redrive's target is a queue too
    sbroker.err(
        "AdminService/Redrive",
        {"queue": "in.made", "target": "out.q"},
        403,
        "permission_denied",
        token=token,
    )
    sbroker.ok("AdminService/Purge", {"queue": "in.made", "max": 1}, token=token)
    sbroker.err(
        "AdminService/Purge", {"queue": "out.q", "max": 1}, 403, "permission_denied", token=token
    )
    for route in ("AdminService/Status", "AdminService/Observe", "AuthService/ListKeys"):
        sbroker.err(route, {}, 403, "permission_denied", token=token)


@pytest.mark.parametrize(
    ("queues", "fragment"),
    [
        (["x"] * 1 + [f"q{i}" for i in range(32)], "at most 32 patterns"),
        (["a" * 261], "longer than 260 characters"),
        (["a*b"], "trailing '*'"),
        ([""], "non-empty"),
        (["a\nb"], "control characters"),
    ],
)
def test_hostile_scopes_are_refused_naming_the_field(
    sbroker: Broker, queues: list[str], fragment: str
) -> None:
    body = {"id": uuid.uuid4().hex, "name": "k", "permissions": ["send"], "queues": queues}
    message = sbroker.err("AuthService/CreateKey", body, 400, "invalid_argument")
    assert "queues" in message and fragment in message


def test_a_key_lists_its_scope(sbroker: Broker) -> None:
    key_id, _ = sbroker.create_key(["send"], queues=["in.b", "in.a*"])
    keys = sbroker.ok("AuthService/ListKeys", {"limit": 1000})["keys"]
    (mine,) = [k for k in keys if k["id"] == key_id]
    assert mine["queues"] == ["in.a*", "in.b"]


def test_the_scope_limits_are_inclusive(sbroker: Broker) -> None:
    """A 260-character pattern and 32 patterns are accepted."""
    sbroker.create_key(["send"], queues=["p" * 259 + "*", *[f"q{i}" for i in range(31)]])


def test_a_scoped_manage_key_deletes_only_schedules_targeting_its_scope(sbroker: Broker) -> None:
    """DeleteSchedule names no queue: the schedule is looked up and its target judged
    (in the deleting transaction). Outside the scope -- or no such schedule -- is 403,
    never 404 or ``deleted: false``: nothing is learned about other scopes' schedules."""
    _, token = sbroker.create_key(["manage"], queues=["in.*"])
    mine, theirs = "s-" + uuid.uuid4().hex[:8], "s-" + uuid.uuid4().hex[:8]
    sbroker.ok("AdminService/CreateSchedule", {"name": mine, "cron": "@daily", "queue": "in.q"})
    sbroker.ok("AdminService/CreateSchedule", {"name": theirs, "cron": "@daily", "queue": "out.q"})
    for name in (theirs, "s-never-" + uuid.uuid4().hex[:8]):
        message = sbroker.err(
            "AdminService/DeleteSchedule", {"name": name}, 403, "permission_denied", token=token
        )
        assert "not scoped" in message and name in message
    names = {s["name"] for s in sbroker.ok("AdminService/ListSchedules")["schedules"]}
    assert {mine, theirs} <= names  # the refused delete removed nothing
    got = sbroker.ok("AdminService/DeleteSchedule", {"name": mine}, token=token)
    assert got == {"deleted": True}
    names = {s["name"] for s in sbroker.ok("AdminService/ListSchedules")["schedules"]}
    assert mine not in names and theirs in names
    (row,) = [
        e
        for e in sbroker.ok("AdminService/ListAudit", {"limit": 1000})["entries"]
        if e["action"] == "DeleteSchedule" and mine in e["detail"]
    ]
    assert row["queue"] == "in.q" and row["actor"].startswith("key:")
    # an unscoped manage key deletes any schedule, as before
    _, unscoped = sbroker.create_key(["manage"])
    assert sbroker.ok("AdminService/DeleteSchedule", {"name": theirs}, token=unscoped) == {
        "deleted": True
    }


def test_the_audit_trail_is_for_unscoped_manage_credentials_only(sbroker: Broker) -> None:
    for perms, queues in ((["manage"], ["in.*"]), (["send"], []), (["listen"], [])):
        _, token = sbroker.create_key(perms, queues=queues)
        for body in ({}, {"queue": "in.q"}):
            sbroker.err("AdminService/ListAudit", body, 403, "permission_denied", token=token)
    _, unscoped = sbroker.create_key(["manage"])
    assert "entries" in sbroker.ok("AdminService/ListAudit", {}, token=unscoped)

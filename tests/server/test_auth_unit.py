"""In-process tests of ``mqlite.server.auth`` and of the starlette app's auth behaviour.

Spec: mqlite-docs.md api-reference "Auth" (exact Bearer parsing: bare tokens, other schemes
and duplicate Authorization headers rejected; 401 vs 403), "Permissions" (the table),
"Read-only monitoring access"; original-behaviour.md §8 "Auth header parsing" (constant-time
comparison against every configured token, no early exit).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import uuid
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from mqlite import errors, wire
from mqlite.config import Settings
from mqlite.server import auth
from mqlite.server.app import BrokerApp
from mqlite.types import AccessKey, Permission

with warnings.catch_warnings():
    # starlette nudges towards httpx2; the project's pytest config turns warnings into errors.
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

TOKEN = "mqk_unit_admin_token_0123456789"
MONITOR = "mqk_unit_monitor_token_0123456789"

# -- bearer_token -----------------------------------------------------------------------


def H(*values: bytes, name: bytes = b"authorization") -> list[tuple[bytes, bytes]]:
    return [(b"host", b"x"), *((name, v) for v in values), (b"accept", b"*/*")]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (H(b"Bearer abc"), "abc"),
        (H(b"Bearer abc", name=b"Authorization"), "abc"),  # header names are case-insensitive
        (H(b"Bearer abc", name=b"AUTHORIZATION"), "abc"),
        (H(b"Bearer mqk_" + b"a" * 64), "mqk_" + "a" * 64),
        (H(), None),  # missing
        (H(b"abc"), None),  # bare token
        (H(b"bearer abc"), None),  # lowercase scheme
        (H(b"BEARER abc"), None),
        (H(b"Basic abc"), None),  # another scheme
        (H(b"Token abc"), None),
        (H(b"Bearer "), None),  # empty token
        (H(b"Bearer"), None),
        (H(b""), None),
        (H(b"Bearerabc"), None),
        (H(b"Bearer  abc"), None),  # two spaces
        (H(b"Bearer abc def"), None),
        (H(b"Bearer abc\tdef"), None),
        (H(b"Bearer \tabc"), None),
        (H(b" Bearer abc"), None),
        (H(b"Bearer ab\xc3\xa9"), None),  # non-ASCII
        (H(b"Bearer abc", b"Bearer abc"), None),  # duplicate, even identical
        (H(b"Bearer abc", b"Bearer def"), None),
        (H(b"Bearer abc", b""), None),
        ([(b"authorization", b"Bearer abc"), (b"Authorization", b"Bearer abc")], None),
    ],
)
def test_bearer_token(headers: list[tuple[bytes, bytes]], expected: str | None) -> None:
    assert auth.bearer_token(headers) == expected


def test_bearer_token_ignores_similar_header_names() -> None:
    headers = [(b"proxy-authorization", b"Bearer other"), (b"authorization", b"Bearer abc")]
    assert auth.bearer_token(headers) == "abc"
    assert auth.bearer_token([(b"x-authorization", b"Bearer abc")]) is None


# -- TokenSet ---------------------------------------------------------------------------


def _tokens(n: int) -> list[str]:
    return [f"mqk_{uuid.UUID(int=i).hex}{i:032x}" for i in range(n)]


def test_token_set_membership_with_many_tokens() -> None:
    tokens = _tokens(2000)
    ts = auth.TokenSet(tokens)
    for t in (tokens[0], tokens[1], tokens[999], tokens[-1]):
        assert t in ts
    for t in ("", tokens[0][:-1], tokens[0] + "x", tokens[-1].upper(), " " + tokens[5]):
        assert t not in ts
    assert None not in ts
    assert 123 not in ts
    assert b"x" not in ts
    assert "anything" not in auth.TokenSet([])


def test_token_set_is_case_sensitive() -> None:
    ts = auth.TokenSet(["mqk_AbC"])
    assert "mqk_AbC" in ts
    assert "mqk_abc" not in ts


def test_token_set_compares_every_token_no_early_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The number of constant-time comparisons does not depend on where (or whether) the
    candidate matches: no early exit leaks the position of a token."""
    tokens = _tokens(300)
    ts = auth.TokenSet(tokens)
    calls = 0
    real = hmac.compare_digest

    def counting(a: Any, b: Any) -> bool:
        nonlocal calls
        calls += 1
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", counting)
    for candidate in (tokens[0], tokens[150], tokens[-1], "absent", ""):
        calls = 0
        _ = candidate in ts
        assert calls == len(tokens), candidate


def test_token_set_holds_no_plain_token() -> None:
    secret = "mqk_" + "7" * 64
    ts = auth.TokenSet([secret])
    state = repr(getattr(ts, "__dict__", {})) + repr(
        [getattr(ts, s) for s in getattr(ts, "__slots__", ())]
    )
    assert secret not in state and "7" * 64 not in state


# -- authorize: the permission table ----------------------------------------------------

SEND_KEY = auth.Principal("key", frozenset({"send"}), "k1")
LISTEN_KEY = auth.Principal("key", frozenset({"listen"}), "k2")
BOTH_KEY = auth.Principal("key", frozenset({"send", "listen"}), "k3")


@pytest.mark.parametrize(
    ("principal", "allowed"),
    [
        (auth.ADMIN, {"send", "listen", "manage", "manage_keys", "monitor"}),
        (SEND_KEY, {"send"}),
        (LISTEN_KEY, {"listen"}),
        (BOTH_KEY, {"send", "listen"}),
        (auth.MONITOR, {"monitor"}),
    ],
)
def test_authorize_with_auth_on(principal: auth.Principal, allowed: set[str]) -> None:
    for permission in ("send", "listen", "manage", "manage_keys", "monitor"):
        if permission in allowed:
            auth.authorize(principal, permission, auth_enabled=True)
        else:
            with pytest.raises(errors.PermissionDenied):
                auth.authorize(principal, permission, auth_enabled=True)


def test_authorize_with_auth_off() -> None:
    for permission in ("send", "listen", "manage"):
        auth.authorize(auth.ANONYMOUS, permission, auth_enabled=False)
    with pytest.raises(errors.PermissionDenied):
        auth.authorize(auth.ANONYMOUS, "manage_keys", auth_enabled=False)


# api-reference "Permissions", row by row.
SPEC_PERMISSIONS = {
    "send": {"QueueService/Send", "QueueService/Schedule", "QueueService/Cancel"},
    "listen": {
        f"QueueService/{m}"
        for m in (
            "Receive",
            "ReceiveDeferred",
            "Peek",
            "Stats",
            "Complete",
            "CompleteBatch",
            "Abandon",
            "Reject",
            "Defer",
            "Renew",
            "RenewBatch",
        )
    },
    # "manage or a configured monitor credential" (the monitor row of the table).
    "monitor": {"AdminService/Observe"},
}


def test_route_permissions_match_the_spec_table() -> None:
    for route in wire.ROUTES:
        perm = route.permission.value
        if route.name in SPEC_PERMISSIONS["monitor"]:
            assert perm == "monitor", route.name
        elif route.service in ("AdminService", "AuthService"):
            assert perm == "manage", route.name
        else:
            assert route.name in SPEC_PERMISSIONS[perm], (route.name, perm)
    named = {r.name for r in wire.ROUTES}
    assert SPEC_PERMISSIONS["send"] | SPEC_PERMISSIONS["listen"] <= named


# -- Authenticator ----------------------------------------------------------------------


class Lookup:
    def __init__(self, keys: Mapping[str, AccessKey] | None = None, fail: bool = False) -> None:
        self.keys = dict(keys or {})
        self.calls: list[str] = []
        self.fail = fail

    def __call__(self, token: str) -> AccessKey | None:
        self.calls.append(token)
        if self.fail:
            raise errors.Internal("key store unavailable")
        return self.keys.get(token)


def _key(perms: tuple[str, ...], key_id: str = "a" * 32) -> AccessKey:
    return AccessKey(key_id, "name", perms, 1, 0, 0)


def _principal(a: auth.Authenticator, header: bytes | None) -> auth.Principal:
    headers = [] if header is None else [(b"authorization", header)]
    return asyncio.run(a.principal(headers))


def test_authenticator_auth_off_is_anonymous_without_lookup() -> None:
    lookup = Lookup()
    a = auth.Authenticator(None, (), lookup)
    assert not a.enabled
    assert _principal(a, None) is auth.ANONYMOUS
    assert _principal(a, b"garbage") is auth.ANONYMOUS
    assert lookup.calls == []


def test_authenticator_admin_and_monitor_need_no_key_store() -> None:
    lookup = Lookup(fail=True)  # a failing store must not matter for configured tokens
    a = auth.Authenticator((TOKEN, "second"), (MONITOR,), lookup)
    assert _principal(a, b"Bearer " + TOKEN.encode()) is auth.ADMIN
    second = _principal(a, b"Bearer second")  # the same rights, named by its position
    assert (second.access, second.permissions, second.actor) == ("manage", auth.ALL, "admin:2")
    assert auth.ADMIN.actor == "admin:1"
    assert _principal(a, b"Bearer " + MONITOR.encode()) is auth.MONITOR
    assert lookup.calls == []


def test_authenticator_managed_keys() -> None:
    lookup = Lookup(
        {
            "send-tok": _key(("send",)),
            "both-tok": _key(("listen", "send")),
            "boss-tok": _key(("manage",)),
        }
    )
    a = auth.Authenticator((TOKEN,), (), lookup)
    p = _principal(a, b"Bearer send-tok")
    assert p.permissions == frozenset({"send"}) and p.access == "key"
    assert _principal(a, b"Bearer both-tok").permissions == frozenset({"send", "listen"})
    boss = _principal(a, b"Bearer boss-tok")
    assert boss.access == "manage" and {"send", "listen", "manage"} <= boss.permissions
    with pytest.raises(errors.Unauthenticated):
        _principal(a, b"Bearer unknown-tok")
    assert lookup.calls == ["send-tok", "both-tok", "boss-tok", "unknown-tok"]


def test_authenticator_malformed_header_never_reaches_the_store() -> None:
    lookup = Lookup()
    a = auth.Authenticator((TOKEN,), (), lookup)
    for header in (None, TOKEN.encode(), b"bearer " + TOKEN.encode(), b"Basic x", b"Bearer "):
        with pytest.raises(errors.Unauthenticated):
            _principal(a, header)
    with pytest.raises(errors.Unauthenticated):
        asyncio.run(a.principal([(b"authorization", b"Bearer x"), (b"authorization", b"x")]))
    assert lookup.calls == []


def test_authenticator_store_failure_is_an_error_never_a_bypass() -> None:
    a = auth.Authenticator((TOKEN,), (), Lookup(fail=True))
    with pytest.raises(errors.MQLiteError) as info:
        _principal(a, b"Bearer some-managed-token")
    assert not isinstance(info.value, errors.Unauthenticated)  # a server error, not 401


# -- the in-process app (starlette TestClient) ------------------------------------------


def _app(env: Mapping[str, str]) -> BrokerApp:
    return BrokerApp(Settings.from_env({"MQLITE_DB": ":memory:", **env}))


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(_app({"MQLITE_TOKENS": TOKEN})) as c:
        yield c


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


ADMIN = _bearer(TOKEN)
JSON = {"Content-Type": "application/json"}
RPC = wire.PATH_PREFIX


def _err(r: Any, status: int, code: str) -> str:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert body["code"] == code, body
    return str(body["message"])


def test_app_401_then_405_then_403_then_400(client: TestClient) -> None:
    path = RPC + "AdminService/CreateQueue"
    _err(client.get(path), 401, "unauthenticated")  # auth first
    _err(client.get(path, headers=ADMIN), 405, "unimplemented")
    key = client.post(
        RPC + "AuthService/CreateKey",
        json={"id": "1" * 32, "name": "s", "permissions": ["send"]},
        headers=ADMIN,
    ).json()["token"]
    _err(client.post(path, content=b"{", headers=_bearer(key)), 403, "permission_denied")
    _err(client.post(path, content=b"{", headers={**ADMIN, **JSON}), 400, "invalid_argument")


def test_app_unknown_path_401_before_404(client: TestClient) -> None:
    _err(client.post("/nope", json={}), 401, "unauthenticated")
    msg = _err(client.post("/nope", json={}, headers=ADMIN), 404, "not_found")
    assert msg == "no such path: /nope"


def test_app_open_paths(client: TestClient) -> None:
    assert client.get("/").json()["auth"] == "bearer"
    assert client.get("/healthz").text == "ok"
    assert client.get("/openapi.json").status_code == 200


def test_app_key_lifecycle(client: TestClient) -> None:
    out = client.post(
        RPC + "AuthService/CreateKey",
        json={"id": "2" * 32, "name": "listener", "permissions": ["listen"]},
        headers=ADMIN,
    )
    assert out.status_code == 200, out.text
    token = out.json()["token"]
    client.post(RPC + "AdminService/CreateQueue", json={"name": "q"}, headers=ADMIN)
    stats = RPC + "QueueService/Stats"
    assert client.post(stats, json={"queue": "q"}, headers=_bearer(token)).status_code == 200
    _err(
        client.post(
            RPC + "QueueService/Send", json={"queue": "q", "messages": []}, headers=_bearer(token)
        ),
        403,
        "permission_denied",
    )
    client.post(RPC + "AuthService/RevokeKey", json={"id": "2" * 32}, headers=ADMIN)
    _err(client.post(stats, json={"queue": "q"}, headers=_bearer(token)), 401, "unauthenticated")


def test_app_monitor_token_metrics_only() -> None:
    env = {"MQLITE_TOKENS": TOKEN, "MQLITE_MONITOR_TOKENS": MONITOR, "MQLITE_METRICS": "on"}
    with TestClient(_app(env)) as c:
        assert c.get("/metrics", headers=_bearer(MONITOR)).status_code == 200
        assert c.get("/metrics", headers=ADMIN).status_code == 200
        assert c.get("/metrics").status_code == 401
        for route in wire.ROUTES:
            r = c.post(route.path, json={}, headers=_bearer(MONITOR))
            if route is wire.OBSERVE:  # Observe and /metrics are all a monitor may do
                assert r.status_code == 200 and r.json()["access"] == "monitor"
            else:
                _err(r, 403, "permission_denied")


def test_app_auth_off_forbids_key_management() -> None:
    # A loopback Host: with auth off the broker serves no other (tests/e2e/test_hostile_http).
    with TestClient(_app({"MQLITE_TOKENS": "off"}), base_url="http://127.0.0.1") as c:
        assert c.get("/").json()["auth"] == "none"
        assert c.post(RPC + "AdminService/CreateQueue", json={"name": "q"}).status_code == 200
        for method in ("CreateKey", "ListKeys", "RevokeKey"):
            _err(c.post(f"{RPC}AuthService/{method}", json={}), 403, "permission_denied")


def test_app_cors_preflight_before_auth(client: TestClient) -> None:
    r = client.options(RPC + "QueueService/Send")
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == "*"
    assert r.headers["access-control-allow-headers"] == "Authorization, Content-Type"
    r = client.post(RPC + "QueueService/Send", json={})
    assert r.headers["access-control-allow-origin"] == "*"  # also on a 401


def test_app_logs_never_hold_a_token_or_body(capsys: pytest.CaptureFixture[str]) -> None:
    # The app's JSON handler binds to sys.stderr when its lifespan starts: start it here.
    # MQLITE_ACCESS_LOG=all (explicit: the default may become `errors` with the audit trail).
    with TestClient(_app({"MQLITE_TOKENS": TOKEN, "MQLITE_ACCESS_LOG": "all"})) as client:
        client.post(RPC + "AdminService/CreateQueue", json={"name": "q"}, headers=ADMIN)
        body = "c2VjcmV0LWJvZHktcGF5bG9hZA=="  # "secret-body-payload"
        client.post(
            RPC + "QueueService/Send",
            json={"queue": "q", "messages": [{"body": body}]},
            headers=ADMIN,
        )
        client.post(RPC + "QueueService/Send", json={"queue": "q"}, headers=_bearer("wrong-tok"))
    err = capsys.readouterr().err
    for needle in (TOKEN, "wrong-tok", body, "secret-body-payload"):
        assert needle not in err
    lines = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    sends = [x for x in lines if x.get("route") == "QueueService/Send"]
    assert [x["status"] for x in sends] == [200, 401]
    assert sends[0]["queue"] == "q" and sends[0]["n"] == 1
    assert sends[1]["code"] == "unauthenticated"


def test_permission_denied_names_the_permission_in_words() -> None:
    """The route table holds ``Permission`` members; a 403 names the wire word, never the
    enum repr (``<Permission.MANAGE: 'manage'>`` once reached HTTP bodies)."""
    sender = auth.Principal("key", frozenset({"send"}))
    with pytest.raises(errors.PermissionDenied) as denied:
        auth.authorize(sender, Permission.MANAGE, auth_enabled=True)
    assert denied.value.message == "this credential lacks the manage permission"

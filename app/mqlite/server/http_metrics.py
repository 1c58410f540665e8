"""The server's own measurements (observability: "HTTP request measurements originate in
the server"): requests by RPC and result code (authentication refusals included), their
cumulative whole-request time, the post-authentication handler histogram, and the final
authentication outcomes. Plain counters, touched only on the event loop (no lock); the
observation copies them (``snapshot``) and /metrics renders that copy.

Every registered RPC has every result code from the start (zeros), so the first failure
after a good scrape shows in ``increase()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mqlite import errors
from mqlite.engine import observation as o
from mqlite.engine.measure import BUCKETS, Histogram
from mqlite.server import auth

# "ok" for success, else the error envelope's code (ops/metric-contract.json, rpc code).
CODES = (
    "ok",
    "invalid_argument",
    "group_required",
    "unauthenticated",
    "permission_denied",
    "not_found",
    "already_exists",
    "name_conflict",
    "key_conflict",
    "lock_lost",
    "queue_changed",
    "queue_not_empty",
    "message_too_large",
    "canceled",
    "outcome_unknown",
    "unimplemented",
    "unavailable",
    "internal",
    "resource_exhausted",
)
AUTH_OUTCOMES = (
    "success",
    "missing",
    "invalid",
    "expired",
    "revoked",
    "permission_denied",
    "backend_error",
)


class HttpMeasurements:
    def __init__(self, rpcs: Iterable[str]) -> None:
        names = list(rpcs)
        self.requests = {(r, c): 0 for r in names for c in CODES}
        self.durations = dict.fromkeys(self.requests, 0.0)
        self.handlers = {r: Histogram() for r in names}
        self.authentication = dict.fromkeys(AUTH_OUTCOMES, 0)

    def route(self, rpc: str) -> RouteMeter:
        return RouteMeter(self, rpc)

    def authenticated(self, outcome: str) -> None:
        self.authentication[outcome] += 1

    async def authenticate(
        self, authenticator: auth.Authenticator, headers: Sequence[tuple[bytes, bytes]]
    ) -> auth.Principal:
        """``authenticator.principal`` with its refusal counted by outcome (a key-store
        failure is ``backend_error``: a server error, never a pass)."""
        try:
            principal = await authenticator.principal(headers)
        except errors.Unauthenticated as exc:
            self.authenticated(auth.outcome_of(exc))
            raise
        except Exception:
            self.authenticated("backend_error")
            raise
        return principal

    def authorize(self, principal: auth.Principal, permission: str, *, auth_enabled: bool) -> None:
        try:
            auth.authorize(principal, permission, auth_enabled=auth_enabled)
        except errors.PermissionDenied:
            if auth_enabled:
                self.authenticated("permission_denied")
            raise
        if auth_enabled:
            self.authenticated("success")

    def snapshot(self) -> o.Http:
        return o.Http(
            "available",
            tuple(
                o.RpcRequests(rpc, code, n, round(self.durations[rpc, code], 9))
                for (rpc, code), n in self.requests.items()
            ),
            tuple(o.AuthOutcome(k, n) for k, n in self.authentication.items()),
            tuple(_latency(rpc, h) for rpc, h in self.handlers.items()),
        )


def _latency(rpc: str, h: Histogram) -> o.HandlerLatency:
    """One RPC's handler histogram in the original's ``handler_latency`` encoding."""
    buckets = (o.LatencyBucket(le, n) for le, n in zip(BUCKETS, h.cumulative(), strict=True))
    return o.HandlerLatency(rpc, tuple(buckets), h.count, round(h.sum, 9))


class RouteMeter:
    """One registered RPC's recorders (resolved once per route, not per request)."""

    __slots__ = ("_handler", "_m", "_rpc", "authenticate", "authorize")

    def __init__(self, m: HttpMeasurements, rpc: str) -> None:
        self._m = m
        self._rpc = rpc
        self._handler = m.handlers[rpc]
        self.authenticate = m.authenticate
        self.authorize = m.authorize

    def handled(self, seconds: float) -> None:
        self._handler.observe(seconds)

    def finished(self, code: str, seconds: float) -> None:
        key = (self._rpc, code if code in CODES else "internal")
        self._m.requests[key] += 1
        self._m.durations[key] += seconds

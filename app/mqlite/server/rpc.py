"""The RPC dispatcher: ``POST /mqlite.v1.<Service>/<Method>`` by one dict lookup.

RPCs are the broker's hot path, so they are served as plain ASGI in front of the
middleware-wrapped starlette app (which keeps the open endpoints, /metrics, the 404
catch-all, CORS preflights and the lifespan): no per-request routing scan, no
Request/Response objects, no middleware layers -- the endpoint adds the CORS header and
writes its own access-log line. Order per request:
authenticate (401) → POST only (405) → permission (403) → the credential's share of the
connection cap (503, ``shares.py``) → read the body under the 32 MiB
cap (413, before it is buffered) → strict decode (400) → handler → encode. Errors become
the ``{"code","message"}`` envelope; an unexpected exception is a logged 500 with no
traceback for the client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from mqlite import errors, wire
from mqlite.server.audit_actor import AUDITED, actor_of, request_id
from mqlite.server.auth import authorize_scope
from mqlite.server.cors import cors_headers
from mqlite.server.guards import check_local_caller
from mqlite.server.handlers import BY_ROUTE, Context
from mqlite.server.logging import log_request

if TYPE_CHECKING:
    from mqlite.server.app import BrokerApp

log = logging.getLogger("mqlite.server")

JSON_HEADERS = [(b"content-type", b"application/json")]


async def respond(
    send: Send, status: int, body: bytes, extra_headers: list[tuple[bytes, bytes]]
) -> None:
    headers = [*JSON_HEADERS, (b"content-length", str(len(body)).encode()), *extra_headers]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


Endpoint = Callable[[Scope, Receive, Send], Awaitable[None]]


class RpcDispatcher:
    def __init__(self, broker: BrokerApp, app: ASGIApp) -> None:
        self.app = app
        self.broker = broker
        self.cors = bool(broker.settings.cors)
        self.endpoints: dict[str, Endpoint] = {r.path: self._endpoint(r) for r in wire.ROUTES}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self.endpoints.get(scope["path"]) if scope["type"] == "http" else None
        if endpoint is None or (scope["method"] == "OPTIONS" and self.cors):
            # Preflights are answered by CORS, before auth; with CORS off an OPTIONS is
            # an ordinary request: authenticated, then 405.
            await self.app(scope, receive, send)
        else:
            await endpoint(scope, receive, send)

    def _endpoint(self, route: wire.Route[Any, Any]) -> Endpoint:
        handler = BY_ROUTE[route.name].handler
        # What the caller must hold is the route's (wire table), never decided here.
        permission = "manage_keys" if route.requires_auth else route.permission
        broker = self.broker
        authenticator = broker.authenticator
        auth_enabled = broker.settings.auth
        # Measurements (http_metrics.py): authentication outcome, post-auth handler time,
        # result code and whole-request time. Always on: Observe reports them too.
        meter = broker.http_metrics.route(route.name)
        intake = broker.intake
        shares = broker.shares
        allow_remote = broker.settings.insecure_allow_remote
        extra_headers = cors_headers(broker.settings.cors)
        limiter = broker.rate_limiter
        # Rate limits apply to managed keys only (auth on); a Send pays for each message.
        limited = auth_enabled
        counts_messages = route.name in ("QueueService/Send", "QueueService/Schedule")
        audited = route.name in AUDITED  # decided here: the hot routes pay nothing per call

        async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
            fields: dict[str, Any] = {}
            headers = extra_headers
            started = time.perf_counter()
            authorized = 0.0
            try:
                if not auth_enabled:
                    check_local_caller(scope["headers"], allow_remote=allow_remote)
                principal = await meter.authenticate(authenticator, scope["headers"])
                if scope["method"] != "POST":
                    raise errors.Unimplemented("POST required")
                meter.authorize(principal, permission, auth_enabled=auth_enabled)
                authorized = time.perf_counter()
                share = shares.enter(principal)
                try:
                    async with intake.request(route, scope, receive) as req:
                        runtime = broker.runtime
                        if runtime is None:
                            raise errors.Internal("broker is starting")
                        if principal.scope:  # a scoped key: the names it addresses (403)
                            authorize_scope(principal, route.name, req, runtime.engine.topic_of)
                        if principal.key_id and limited:  # a managed key's bucket (429)
                            cost = len(req.messages) if counts_messages else 1
                            limiter.take(
                                principal.key_id, principal.rate_limit_per_s, principal.burst, cost
                            )
                        ctx = Context(runtime, fields, receive, broker.started_ms, broker.settings)
                        ctx.access, ctx.broker, ctx.share = principal.access, broker, share
                        ctx.scope = principal.scope
                        if audited:  # who and which request, for the audit row
                            rid = request_id(scope["headers"])
                            fields["request_id"] = rid
                            headers = [*headers, (b"x-request-id", rid.encode())]
                            ctx.actor = actor_of(principal, rid)
                        body = wire.encode_response(route, await handler(ctx, req))
                finally:
                    shares.leave(share)
                status = 200
            except errors.MQLiteError as exc:
                fields["code"] = exc.code
                status, body = exc.http_status, wire.error_body(exc)
                if status == 405:
                    headers = [*extra_headers, (b"allow", b"POST")]
                elif isinstance(exc, errors.ResourceExhausted):
                    headers = [*extra_headers, (b"retry-after", str(exc.retry_after_s).encode())]
            except Exception:
                log.exception("unexpected error in %s", route.name)
                fields["code"] = "internal"
                status, body = 500, wire.error_body(errors.Internal("internal error"))
            if authorized:
                meter.handled(time.perf_counter() - authorized)
            # Counted before the answer leaves: the caller's next request sees this one.
            meter.finished(fields.get("code", "ok"), time.perf_counter() - started)
            try:
                await respond(send, status, body, headers)
            finally:
                log_request(scope, status, started, fields)

        return endpoint

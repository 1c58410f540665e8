"""The broker's ASGI app: starlette routes built from the wire route table.

Request path, for every RPC: authenticate (401) → POST only (405) → permission (403) →
read the body under the 32 MiB cap (413, before it is fully buffered) → strict decode
(400) → handler on the engine's writer thread → encode. Errors become the spec's
``{"code","message"}`` envelope; an unexpected exception is a logged 500, never a
traceback to the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from mqlite import __version__, defaults, errors, wire
from mqlite.config import Settings
from mqlite.engine import DLQBounds, Engine
from mqlite.scheduling import MaintenanceScheduler
from mqlite.server import auth
from mqlite.server.cors import CORSMiddleware
from mqlite.server.handlers import HANDLERS, Context
from mqlite.server.logging import AccessLogMiddleware, configure
from mqlite.server.metrics import Metrics
from mqlite.server.runtime import Runtime

log = logging.getLogger("mqlite.server")

JSON = "application/json"
# Every method reaches our endpoints, which answer a wrong one with the 405 envelope.
ANY = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
DESCRIPTION = "Lightweight SQLite-backed message queue with Azure Service Bus-style semantics."


def error_response(exc: errors.MQLiteError) -> Response:
    return Response(wire.error_body(exc), status_code=exc.http_status, media_type=JSON)


async def read_body(request: Request, cap: int) -> bytes:
    """The request body, refusing (413) as soon as it is known to exceed ``cap``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise errors.MessageTooLarge(f"request body over {cap} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise errors.MessageTooLarge(f"request body over {cap} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


class BrokerApp:
    """The ASGI callable gunicorn's worker serves; ``begin_drain`` starts a shutdown."""

    def __init__(self, settings: Settings, *, clock: Any = None) -> None:
        self.settings = settings
        self._clock = clock
        self.runtime: Runtime | None = None
        self.metrics = Metrics()
        self.authenticator = auth.Authenticator(
            settings.tokens, settings.monitor_tokens, self._lookup_key
        )
        routes = [Route("/", self.discovery, methods=ANY), Route("/healthz", self.healthz)]
        routes.append(Route("/openapi.json", self.openapi, methods=["GET"]))
        if settings.metrics:
            routes.append(Route("/metrics", self.metrics_endpoint, methods=["GET"]))
        for route in wire.ROUTES:
            routes.append(Route(route.path, self._rpc(route), methods=ANY))
        routes.append(Route("/{path:path}", self.not_found, methods=ANY))
        app: Any = Starlette(routes=routes, lifespan=self._lifespan)
        if settings.cors:
            app = CORSMiddleware(app, settings.cors)
        self._app = AccessLogMiddleware(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    def begin_drain(self) -> None:
        if self.runtime is not None:
            self.runtime.begin_drain()

    # -- lifecycle ------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lifespan(self, _: Starlette) -> AsyncIterator[None]:
        s = self.settings
        configure(s.log_level)
        engine = Engine(
            s.db,
            clock=self._clock,
            sync=s.sync,
            max_message_bytes=s.max_message_bytes,
            dlq_defaults=DLQBounds(s.dlq_max_age_ms, s.dlq_max_count, s.dlq_max_bytes),
        )
        self.runtime = Runtime(engine)
        self.started_ms = engine.now_ms()
        scheduler = MaintenanceScheduler(engine)
        scheduler.start()
        log.info("broker ready", extra={"backend": engine.store.location.backend})
        try:
            yield
        finally:
            self.runtime.begin_drain()
            scheduler.stop()
            self.runtime.shutdown()
            engine.close()
            log.info("broker stopped")

    async def _lookup_key(self, token: str) -> Any:
        assert self.runtime is not None
        return await self.runtime.call(self.runtime.engine.authenticate_key, token)

    # -- open endpoints -------------------------------------------------------------------

    async def discovery(self, _: Request) -> Response:
        card: dict[str, Any] = {
            "name": "mqlite",
            "description": DESCRIPTION,
            "version": __version__,
            "status": "ok",
            "auth": "bearer" if self.settings.auth else "none",
            "docs": "/openapi.json",
            "endpoints": [r.path for r in wire.ROUTES],
            "health": "/healthz",
        }
        if self.settings.metrics:
            card["metrics"] = "/metrics"
        return JSONResponse(card)

    async def healthz(self, _: Request) -> Response:
        return PlainTextResponse("ok")

    async def openapi(self, _: Request) -> Response:
        return Response(json.dumps(wire.openapi_document(__version__)), media_type=JSON)

    async def not_found(self, request: Request) -> Response:
        try:
            await self.authenticator.principal(request.scope["headers"])
        except errors.MQLiteError as exc:
            return error_response(exc)
        return error_response(errors.NotFound(f"no such path: {request.url.path}"))

    async def metrics_endpoint(self, request: Request) -> Response:
        try:
            principal = await self.authenticator.principal(request.scope["headers"])
            if "manage" not in principal.permissions and principal.access != "monitor":
                raise errors.PermissionDenied("metrics require manage or a monitor credential")
            assert self.runtime is not None
            body = await self.runtime.call(self.metrics.render, self.runtime.engine)
        except errors.MQLiteError as exc:
            return PlainTextResponse(exc.message, status_code=exc.http_status)
        return Response(body, media_type=self.metrics.content_type)

    # -- RPCs -----------------------------------------------------------------------------

    def _rpc(self, route: wire.Route[Any, Any]) -> Callable[[Request], Awaitable[Response]]:
        handler = HANDLERS[route.name]
        permission = "manage_keys" if route.name.startswith("AuthService/") else route.permission
        cap = defaults.MAX_REQUEST_BYTES
        observe = self.metrics.observe_rpc

        async def endpoint(request: Request) -> Response:
            fields: dict[str, Any] = request.scope["state"]["log"]
            loop = asyncio.get_running_loop()
            started = loop.time()
            try:
                principal = await self.authenticator.principal(request.scope["headers"])
                if request.method != "POST":
                    raise errors.Unimplemented("POST required")
                auth.authorize(principal, permission, auth_enabled=self.settings.auth)
                req = wire.decode_request(route, await read_body(request, cap))
                runtime = self.runtime
                if runtime is None:
                    raise errors.Internal("broker is starting")
                ctx = Context(runtime, fields, request, self.started_ms, self.settings)
                value = await handler(ctx, req)
                body = wire.encode_response(route, value)
            except errors.MQLiteError as exc:
                fields["code"] = exc.code
                response = error_response(exc)
            except Exception:
                log.exception("unexpected error in %s", route.name)
                fields["code"] = "internal"
                response = error_response(errors.Internal("internal error"))
            else:
                response = Response(body, media_type=JSON)
            observe(route.name, loop.time() - started)
            return response

        return endpoint

"""The broker's ASGI app: RPC dispatcher → (access log → CORS → starlette).

Starlette serves the open endpoints (discovery card, /healthz, /openapi.json, the /ui
console unless MQLITE_UI=off), the opt-in /metrics, the authenticated 404 catch-all and
the lifespan that opens the engine and the maintenance loops; RPCs are dispatched in
front of it (``rpc.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gzip
import json
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from mqlite import errors, wire
from mqlite.config import Settings, process_environ
from mqlite.engine import DiskLimits, DLQBounds, Engine
from mqlite.engine.observation import Observation
from mqlite.push import PushDispatcher
from mqlite.scheduling import MaintenanceScheduler
from mqlite.server import auth, metrics
from mqlite.server.cors import CORSMiddleware
from mqlite.server.diagnostic_log import DiagnosticLog
from mqlite.server.http_metrics import HttpMeasurements
from mqlite.server.intake import Intake
from mqlite.server.logging import AccessLogMiddleware, configure
from mqlite.server.logging import stop as stop_logging
from mqlite.server.observations import Observations
from mqlite.server.ratelimit import RateLimiter
from mqlite.server.replication import ReplicationProbe
from mqlite.server.rpc import RpcDispatcher
from mqlite.server.runtime import Runtime
from mqlite.server.shares import CredentialShares
from mqlite.server.ui import Console
from mqlite.types import AccessKey
from mqlite.version import VERSION as __version__

log = logging.getLogger("mqlite.server")

JSON = "application/json"
# Every method reaches our endpoints, which answer a wrong one with the 405 envelope.
ANY = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
DOCS_URL = "https://github.com/mqlitehq/mqlite"
DESCRIPTION = "Lightweight SQLite-backed message queue with Azure Service Bus-style semantics."


def error_response(exc: errors.MQLiteError) -> Response:
    return Response(wire.error_body(exc), status_code=exc.http_status, media_type=JSON)


def accepts_gzip(accept_encoding: str) -> bool:
    """``gzip`` is listed without ``q=0`` (Prometheus sends ``gzip``)."""
    for item in accept_encoding.split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() == "gzip":
            q = params.strip().lower().removeprefix("q=").strip()
            return not params or q not in ("0", "0.0", "0.00", "0.000")
    return False


class BrokerApp:
    """The ASGI callable gunicorn's worker serves; ``begin_drain`` starts a shutdown."""

    def __init__(self, settings: Settings, *, clock: Any = None) -> None:
        self.settings = settings
        self._clock = clock
        self.runtime: Runtime | None = None
        self.http_metrics = HttpMeasurements(r.name for r in wire.ROUTES)
        self.observations = Observations(self._collect)
        self.replication: ReplicationProbe | None = None
        self.intake = Intake()
        self.rate_limiter = RateLimiter(*settings.key_rate_limit)
        # Each credential's share of the connection cap (the worker sets the effective cap).
        self.shares = CredentialShares(settings.max_connections)
        self.authenticator = auth.Authenticator(
            settings.tokens, settings.monitor_tokens, self._lookup_key, self._key_refusal
        )
        routes = [
            Route("/", self.discovery, methods=ANY),
            Route("/healthz", self.healthz, methods=ANY),
        ]
        routes.append(Route("/openapi.json", self.openapi, methods=["GET"]))
        if settings.ui:
            console = Console()
            routes.append(Route("/ui", console.root, methods=ANY))
            routes.append(Route("/ui/{path:path}", console.asset, methods=ANY))
        if settings.metrics:
            routes.append(Route("/metrics", self.metrics_endpoint, methods=["GET"]))
        routes.append(Route("/{path:path}", self.not_found, methods=ANY))
        app: Any = Starlette(
            routes=routes,
            lifespan=self._lifespan,
            # starlette's own 500 (ServerErrorMiddleware) answers the envelope too.
            exception_handlers={Exception: self._internal_error},
        )
        if settings.cors:
            app = CORSMiddleware(app, settings.cors)
        self._app = RpcDispatcher(self, AccessLogMiddleware(app))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    async def _internal_error(self, request: Request, exc: Exception) -> Response:
        """An unexpected exception outside the RPCs (which catch their own): starlette
        logs it and, if no response started, sends this instead of plain text."""
        return error_response(errors.Internal("internal error"))

    def begin_drain(self) -> None:
        if self.runtime is not None:
            self.runtime.begin_drain()

    # -- lifecycle ------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lifespan(self, _: Starlette) -> AsyncIterator[None]:
        s = self.settings
        configure(s.log_level, s.access_log)
        diagnostics = DiagnosticLog.attach(s.diagnostic_log) if s.diagnostic_log else None
        engine = Engine(
            s.db,
            clock=self._clock,
            sync=s.sync,
            max_message_bytes=s.max_message_bytes,
            dlq_defaults=DLQBounds(s.dlq_max_age_ms, s.dlq_max_count, s.dlq_max_bytes),
            disk=DiskLimits(s.disk_floor_bytes, s.disk_reserve_bytes),
            auth_token=s.db_auth_token,
            checkpoint=s.checkpoint,
            replica=s.db_replica,
            push_allow_networks=s.push_allow_networks,
        )
        engine.audit_max_age_ms, engine.audit_max_rows = s.audit_max_age_ms, s.audit_max_rows
        self.runtime = Runtime(engine)
        self.replication = ReplicationProbe.from_env(
            process_environ(), engine.location.path, engine.now_ms
        )
        self.started_ms = engine.now_ms()
        # A lost lease on a remote database (engine/lease.py): the store refuses writes;
        # the process exits through the ordinary SIGTERM drain (its supervisor decides).
        scheduler = MaintenanceScheduler(
            engine.maintenance,
            on_lease_lost=lambda _: os.kill(os.getpid(), signal.SIGTERM),
            push=PushDispatcher(engine),
        )
        scheduler.start()  # marks the tasks it runs as enabled (engine.maintenance_runs)
        log.info("broker ready", extra={"backend": engine.location.backend})
        try:
            yield
        finally:
            self.runtime.begin_drain()
            scheduler.stop()
            engine.close()
            if self.replication is not None:
                self.replication.final_sync(process_environ())
            log.info("broker stopped")
            if diagnostics is not None:
                diagnostics.close()
            stop_logging()

    def _lookup_key(self, token: str) -> AccessKey | None:
        """A memory read of the engine's key cache: no writer hop per request."""
        runtime = self.runtime
        if runtime is None:
            raise errors.Internal("broker is starting")
        return runtime.engine.authenticate_key(token)

    def _key_refusal(self, token: str) -> str:
        """Why a managed token was refused (expired, revoked, invalid): memory only."""
        runtime = self.runtime
        return "invalid" if runtime is None else runtime.engine.key_refusal(token)

    async def _collect(self, on_sample: Callable[[], None]) -> Observation:
        """The engine's observation (collected off the event loop; the pool is sampled
        before it takes the writer) with this server's HTTP measurements. One per round
        of ``self.observations``: concurrent callers share it."""
        assert self.runtime is not None
        observed = await asyncio.to_thread(self.runtime.engine.observe, on_sample)
        extra: dict[str, Any] = {}
        if self.replication is not None:  # Litestream's socket: off the event loop too
            extra["replication"] = await asyncio.to_thread(self.replication.snapshot)
        return dataclasses.replace(observed, http=self.http_metrics.snapshot(), **extra)

    async def observation(self, access: str) -> Observation:
        """A fresh observation (sampled after this call began), with the caller's access."""
        shared = await self.observations.round()
        return dataclasses.replace(shared.future.result(), access=access)

    # -- open endpoints -------------------------------------------------------------------

    async def discovery(self, _: Request) -> Response:
        card: dict[str, Any] = {
            "name": "mqlite",
            "description": DESCRIPTION,
            "version": __version__,
            "status": "ok",
            "auth": "bearer" if self.settings.auth else "none",
            "docs": DOCS_URL,
            "endpoints": [r.path for r in wire.ROUTES],
            "health": "/healthz",
        }
        if self.settings.metrics:
            card["metrics"] = "/metrics"
        if self.settings.ui:
            card["ui"] = "/ui"
        return JSONResponse(card)

    async def healthz(self, _: Request) -> Response:
        return PlainTextResponse("ok")

    async def openapi(self, _: Request) -> Response:
        return Response(json.dumps(wire.openapi_document(__version__)), media_type=JSON)

    async def not_found(self, request: Request) -> Response:
        """404 after authentication (401 first), except the open console paths, which are
        404 for everyone when the console is off (MQLITE_UI=off)."""
        path = request.url.path
        if not auth.is_exempt(path):
            try:
                await self.authenticator.principal(request.scope["headers"])
            except errors.MQLiteError as exc:
                return error_response(exc)
        return error_response(errors.NotFound(f"no such path: {path}"))

    async def metrics_endpoint(self, request: Request) -> Response:
        """Manage or monitor credentials (the same check as Observe, counted the same)."""
        meter = self.http_metrics
        try:
            principal = await meter.authenticate(self.authenticator, request.scope["headers"])
            meter.authorize(principal, "monitor", auth_enabled=self.settings.auth)
            shared = await self.observations.recent()
            # Per-key rate-limit refusals live in this worker, not in the shared observation.
            limited = self.rate_limiter.metrics_text().encode()
            if accepts_gzip(request.headers.get("accept-encoding", "")):
                if limited:  # rare (a key was refused): compressed with the rest, per scrape
                    body = gzip.compress(await shared.exposition() + limited)
                else:
                    body = await shared.exposition_gzip()
                headers = {"content-type": metrics.CONTENT_TYPE, "content-encoding": "gzip"}
            else:
                body = await shared.exposition() + limited
                headers = {"content-type": metrics.CONTENT_TYPE}
        except errors.MQLiteError as exc:
            return error_response(exc)  # the envelope, like every other error
        return Response(body, headers={**headers, "vary": "Accept-Encoding"})

"""The uvicorn worker, with a graceful drain that starts on the signal (after the fork).

Uvicorn waits for in-flight requests before running the app's lifespan shutdown, so a
parked 20 s long poll would hold the whole shutdown. This worker's server tells the app
to drain (refuse new claims, wake parked polls: they return empty) the moment SIGTERM or
SIGINT arrives, then lets uvicorn finish in-flight requests and run the lifespan shutdown.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from types import FrameType
from typing import Any, ClassVar

from gunicorn.arbiter import Arbiter
from uvicorn.server import Server
from uvicorn_worker import UvicornWorker

from mqlite import defaults
from mqlite.httpguard import GuardedHttpProtocol, connection_cap
from mqlite.server.memory import pin_mmap_threshold
from mqlite.server.shares import reserve_for


class DrainingServer(Server):
    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        drain = getattr(self.config.app, "begin_drain", None)
        if callable(drain):
            drain()
        super().handle_exit(sig, frame)


class DrainWorker(UvicornWorker):  # type: ignore[misc]
    """Exactly one of these serves the broker (the engine is a single writer)."""

    CONFIG_KWARGS: ClassVar[dict[str, Any]] = {
        "loop": "auto",
        # httptools with the head bounds, the connection cap and JSON errors uvicorn
        # lacks (mqlite.httpguard); limit_concurrency stays off: the protocol answers it.
        "http": "mqlite.httpguard:GuardedHttpProtocol",
        # After a response, the head deadline of the next request (mqlite.httpguard).
        "timeout_keep_alive": int(defaults.HEAD_TIMEOUT_S),
        "lifespan": "on",
        "timeout_graceful_shutdown": 8,
        "access_log": False,  # the app writes its own JSON access log
        "server_header": False,
    }

    async def _serve(self) -> None:
        self.config.app = self.wsgi
        pin_mmap_threshold()
        settings = self.wsgi.settings
        cap = connection_cap(settings.max_connections)
        GuardedHttpProtocol.configure(cap, privileged=reserve_for(settings.tokens or ()))
        self.wsgi.shares.cap = cap  # each credential's share is of the effective cap
        server = DrainingServer(config=self.config)
        # gunicorn's master turns SIGINT into SIGQUIT for its worker: treat it like SIGTERM
        # (drain, finish, lifespan shutdown) rather than uvicorn-worker's abrupt quit.
        asyncio.get_running_loop().add_signal_handler(
            signal.SIGQUIT, server.handle_exit, signal.SIGQUIT, None
        )
        await server.serve(sockets=self.sockets)
        if not server.started:
            sys.exit(Arbiter.WORKER_BOOT_ERROR)

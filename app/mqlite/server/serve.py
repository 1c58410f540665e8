"""``mqlite serve``: gunicorn with exactly one uvicorn worker, configured in code.

The master parses the configuration (failing fast on a bad value), checks the database
lock so a second broker on the same file fails with a clear message before forking,
prints a generated administrator token once, and runs gunicorn. The engine opens in the
worker, inside the app's lifespan.
"""

from __future__ import annotations

import sys
from typing import Any

from gunicorn.app.base import BaseApplication

from mqlite import errors
from mqlite.config import Settings
from mqlite.engine.store import check_lock_free

GRACEFUL_TIMEOUT_S = 10


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: Settings, options: dict[str, Any]) -> None:
        self._settings = settings
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        # Runs in the worker (preload_app=False): the master never imports the app, the
        # engine, starlette or uvicorn, which keeps the idle process tree small.
        from mqlite.server.app import BrokerApp

        return BrokerApp(self._settings)


def gunicorn_options(settings: Settings) -> dict[str, Any]:
    host, port = settings.host_port
    bind = f"[{host}]:{port}" if ":" in host else f"{host or '0.0.0.0'}:{port}"
    return {
        "bind": [bind],
        "workers": 1,  # one writer per database: never more than one worker
        "worker_class": "mqlite.server.worker.Worker",
        "graceful_timeout": GRACEFUL_TIMEOUT_S,
        "timeout": 30,
        "keepalive": 120,
        "accesslog": None,  # the app writes its own JSON access log
        "errorlog": "-",
        "loglevel": "warning",
        "proc_name": "mqlite",
        "preload_app": False,
        "limit_request_line": 8190,
        "limit_request_fields": 100,
        "limit_request_field_size": 16384,
    }


def run(settings: Settings) -> int:
    """Start the broker and block until it stops; returns the process exit code."""
    settings.check_serve()
    try:
        check_lock_free(settings.db)
    except errors.DBLocked as exc:
        print(f"mqlite serve: {exc.message}", file=sys.stderr)
        return 1
    banner(settings)
    _Gunicorn(settings, gunicorn_options(settings)).run()
    return 0


def banner(settings: Settings) -> None:
    """Startup lines on stdout; the generated token is printed here, once, never logged."""
    host, port = settings.host_port
    print(f"mqlite broker: listening on {host or '0.0.0.0'}:{port}, db {_safe_db(settings.db)}")
    if not settings.auth:
        print("auth: OFF (MQLITE_TOKENS=off) — every client is an administrator")
    elif settings.token_generated and settings.tokens:
        print("auth: generated administrator token (set MQLITE_TOKENS to keep one):")
        print(f"  {settings.tokens[0]}")
    else:
        print(f"auth: {len(settings.tokens or ())} configured administrator token(s)")
    sys.stdout.flush()


def _safe_db(dsn: str) -> str:
    """The DSN without a query string (which could carry credentials)."""
    return dsn.split("?", 1)[0]

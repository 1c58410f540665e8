"""``mqlite serve``: gunicorn with exactly one uvicorn worker, configured in code.

The master parses the configuration (failing fast on a bad value), checks the database
lock so a second broker on the same file fails with a clear message before forking, checks
that the listen address can be bound (``bindcheck``), prints a generated administrator
token once, and runs gunicorn. The engine opens in the worker, inside the app's lifespan.

Everything the process writes from here on is one JSON object per line (``jsonlog``): the
startup banner on stdout, logs and refusals on stderr.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from gunicorn.app.base import BaseApplication

from mqlite import defaults, errors
from mqlite.config import Settings
from mqlite.engine.lease import name_this_broker
from mqlite.engine.location import parse_dsn
from mqlite.engine.store import check_lock_free
from mqlite.server import diagnostic_log, jsonlog
from mqlite.server.bindcheck import bind_problem, display
from mqlite.version import VERSION as __version__

GRACEFUL_TIMEOUT_S = 10


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: Settings, options: dict[str, Any]) -> None:
        self._settings = settings
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            if key in self.cfg.settings:  # a setting this gunicorn release does not know
                self.cfg.set(key, value)  # (e.g. control_socket_disable before 25) is moot

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
        # The worker's protocol closes a connection that has not sent a complete request
        # head this long after connecting or after its previous response (protocol.py).
        "keepalive": int(defaults.HEAD_TIMEOUT_S),
        "accesslog": None,  # the app writes its own JSON access log
        "errorlog": "-",
        "loglevel": settings.log_level.lower(),
        "logger_class": "mqlite.server.jsonlog.GunicornLogger",  # JSON lines, like ours
        "control_socket_disable": True,  # no gunicornc socket in ~/.gunicorn: nothing uses it
        "proc_name": "mqlite",
        "preload_app": False,
        # No limit_request_*: gunicorn applies them only to its own sync workers. The
        # uvicorn worker's protocol (protocol.py) bounds the request head instead.
    }


def run(settings: Settings) -> int:
    """Start the broker and block until it stops; returns the process exit code."""
    jsonlog.install(settings.log_level)
    try:
        settings.check_serve()
        if settings.diagnostic_log:
            diagnostic_log.check(settings.diagnostic_log)
        check_lock_free(settings.db, settings.db_auth_token)
        if settings.test_kill_point:
            _arm_kill_point(settings.test_kill_point)
    except errors.MQLiteError as exc:
        return refuse(exc.message)
    problem = bind_problem(*settings.host_port)
    if problem is not None:
        return refuse(problem)
    banner(settings)
    name_this_broker()  # a replacement worker keeps the remote lease (engine/lease.py)
    _Gunicorn(settings, gunicorn_options(settings)).run()
    return 0


def _arm_kill_point(spec: str) -> None:
    """Test-only (``check_serve`` allowed it): armed in the master, so the worker forked
    from it inherits the point (imported only here: the master stays small otherwise)."""
    from mqlite.engine import killpoints

    kill_point = killpoints.parse(spec)
    killpoints.arm(kill_point)
    jsonlog.write_line(
        sys.stderr,
        f"TEST HOOK: this broker SIGKILLs itself at kill point {spec} "
        "(MQLITE_TEST_HOOKS=on); never run it with real data",
        level=logging.WARNING,
        kill_point=kill_point.point,
    )


def refuse(message: str) -> int:
    """A startup refusal: ONE JSON line on stderr, exit 1 (nothing was started)."""
    jsonlog.write_line(sys.stderr, message, level=logging.ERROR)
    return 1


def note(message: str) -> None:
    """One informational JSON line on stdout (the replica launcher's restore notice)."""
    jsonlog.write_line(sys.stdout, message)


def banner(settings: Settings) -> None:
    """Startup lines on stdout, JSON like every other line; a generated token is printed
    here, once, in the ``token`` field (a log pipeline can drop that one field), and is
    never logged on stderr."""
    addr = display(*settings.host_port)
    db = _safe_db(settings.db)
    jsonlog.write_line(
        sys.stdout,
        f"mqlite broker listening on {addr}, db {db}",
        addr=addr,
        db=db,
        version=__version__,
    )
    if not settings.auth:
        jsonlog.write_line(
            sys.stdout,
            "auth is OFF (MQLITE_TOKENS=off): every client is an administrator",
            level=logging.WARNING,
            auth="off",
        )
    elif settings.token_generated and settings.tokens:
        jsonlog.write_line(
            sys.stdout,
            "generated an administrator token for this run, in the token field "
            "(set MQLITE_TOKENS to keep one)",
            auth="generated",
            token=settings.tokens[0],
        )
    else:
        count = len(settings.tokens or ())
        jsonlog.write_line(
            sys.stdout, f"auth: {count} configured administrator token(s)", auth="configured"
        )
    if settings.ui:
        url = console_url(addr)
        jsonlog.write_line(
            sys.stdout, f"admin console at {url} (sign in with an administrator token)", ui=url
        )


def console_url(addr: str) -> str:
    """Where a browser on this host reaches the console: a wildcard bind is reached on
    loopback."""
    host, _, port = addr.rpartition(":")
    if host in ("0.0.0.0", "[::]", ""):
        host = "127.0.0.1"
    return f"http://{host}:{port}/ui/"


def _safe_db(dsn: str) -> str:
    """The DSN without a query string (which could carry credentials); a remote server's
    host masked as Status shows it."""
    try:
        return parse_dsn(dsn).shown
    except errors.MQLiteError:
        return dsn.split("?", 1)[0]

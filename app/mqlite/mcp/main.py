"""The ``mqlite-mcp`` command: configure, check the broker answers, serve MCP.

Startup fails fast, with one line on stderr naming what to fix, when the MCP SDK is not
installed (exit 1), the configuration is wrong (exit 2), or the broker cannot be used
(exit 1): nothing answers at ``MQLITE_ENDPOINT``, it is not an mqlite broker, or it
refuses the token. A host that launched us then shows that line instead of a session
whose every call fails. A credential the broker accepts but limits (a monitor or
``send``-only key) is fine: its tools answer ``permission_denied`` per call.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from mqlite import errors, wire
from mqlite.config import ConfigError, process_environ
from mqlite.sdk.endpoint import ConnectionFailed
from mqlite.sdk.http import HttpClient
from mqlite.sdk.retry import RetryPolicy
from mqlite.version import VERSION

from . import logs
from .settings import Settings

log = logging.getLogger("mqlite.mcp")

PROBE_TIMEOUT_S = 5.0
CALL_TIMEOUT_S = 30.0
INSTALL_HINT = "the MCP SDK is not installed: pip install 'mqlite[mcp]'"


class StartupError(Exception):
    """The broker cannot be used; the message says why and what to check."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mqlite-mcp",
        description="The mqlite broker as Model Context Protocol tools, over stdio (default) "
        "or streamable HTTP. Configured by MQLITE_ENDPOINT (default "
        "http://127.0.0.1:6754) and MQLITE_TOKEN or MQLITE_TOKEN_FILE.",
    )
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio; clients must "
        "send the broker token as 'Authorization: Bearer'",
    )
    p.add_argument("--version", action="version", version=f"mqlite-mcp {VERSION}")
    return p


def probe(settings: Settings) -> None:
    """One Status call: proves a broker answers and takes the token (403 is fine)."""
    client = HttpClient(
        settings.endpoint,
        settings.token or "",
        timeout=PROBE_TIMEOUT_S,
        retry=RetryPolicy(attempts=2),
    )
    where = f"the broker at {settings.origin} (MQLITE_ENDPOINT)"
    try:
        status = client.exchange(wire.STATUS, wire.EmptyRequest())
        log.info("broker ready", extra={"endpoint": settings.origin, "version": status.version})
    except errors.PermissionDenied:
        log.info("broker ready (limited credential)", extra={"endpoint": settings.origin})
    except errors.Unauthenticated as exc:
        hint = "set MQLITE_TOKEN" if not settings.token else "check MQLITE_TOKEN"
        raise StartupError(f"{where} refused the credential ({exc.message}): {hint}") from None
    except ConnectionFailed as exc:
        raise StartupError(f"no broker answers at {settings.origin}: {exc.message}") from None
    except errors.MQLiteError as exc:
        raise StartupError(
            f"{settings.origin} does not answer like an mqlite broker "
            f"({exc.code}: {exc.message}); check MQLITE_ENDPOINT"
        ) from None
    finally:
        client.close()


def _fail(message: str, code: int) -> int:
    print(f"mqlite-mcp: {message}", file=sys.stderr, flush=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        from .listener import serve_http
        from .server import build, serve_stdio
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in ("mcp", "mcp_types"):
            return _fail(INSTALL_HINT, 1)
        raise
    try:
        settings = Settings.from_env(process_environ(), args.http)
    except ConfigError as exc:
        return _fail(exc.message, 2)
    logs.install()
    try:
        probe(settings)
    except StartupError as exc:
        return _fail(str(exc), 1)

    import anyio

    from .forward import Forwarder

    client = HttpClient(settings.endpoint, settings.token or "", timeout=CALL_TIMEOUT_S)
    server = build(Forwarder(client))
    try:
        if settings.http is None:
            log.info("serving MCP on stdio", extra={"endpoint": settings.origin})
            anyio.run(serve_stdio, server)
        else:
            host, port = settings.http
            assert settings.token is not None  # Settings refuses --http without one
            log.info(
                "serving MCP over streamable HTTP",
                extra={"url": f"http://{host}:{port}/mcp", "endpoint": settings.origin},
            )
            if not serve_http(server, settings.token, host, port, settings.max_connections):
                return _fail(f"cannot listen on {host}:{port} (--http): see the error above", 1)
    except KeyboardInterrupt:
        pass
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

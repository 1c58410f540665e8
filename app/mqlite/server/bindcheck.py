"""Can ``mqlite serve`` listen where it was told to? Asked once, before gunicorn starts.

gunicorn meets a busy address by retrying it five times over five seconds, logging two
lines per try, and then exits 1; a user reads ten lines about "Connection in use" and
none about what to do. This check binds a throwaway socket the way gunicorn will
(``SO_REUSEADDR``, the same address family) and turns a refusal into one sentence that
names the address and the way out. A race with another process between this check and
gunicorn's own bind is possible; it then fails the way gunicorn always did.
"""

from __future__ import annotations

import errno
import socket


def display(host: str, port: int) -> str:
    """``127.0.0.1:6754``, ``[::1]:6754``, ``0.0.0.0:6754`` (every interface)."""
    if ":" in host:
        return f"[{host}]:{port}"
    return f"{host or '0.0.0.0'}:{port}"


def bind_problem(host: str, port: int) -> str | None:
    """None when ``host:port`` can be bound now; otherwise what to tell the user."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    where = display(host, port)
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
            probe.bind((host or "0.0.0.0", port))
    except socket.gaierror as exc:
        return f"cannot listen on {where}: the host name does not resolve ({exc.strerror})"
    except OSError as exc:
        return f"cannot listen on {where}: {_advice(exc, host)}"
    return None


def _advice(exc: OSError, host: str) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            "the address is already in use (another mqlite serve, or another program, is "
            "listening there); stop it, or choose another address with --addr HOST:PORT "
            "or MQLITE_ADDR"
        )
    if exc.errno == errno.EACCES:
        return (
            "permission denied (ports below 1024 need privileges); choose a port above "
            "1024 with --addr HOST:PORT or MQLITE_ADDR"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"{host} is not an address of this machine; use 127.0.0.1 (this machine only), "
            "0.0.0.0 (every interface) or one of its own addresses"
        )
    return exc.strerror or str(exc)

"""With auth off, only loopback callers: the DNS-rebinding and cross-site guard.

A broker with ``MQLITE_TOKENS=off`` trusts whoever reaches its loopback port, and a web
page can: through DNS rebinding (``evil.example`` re-resolves to 127.0.0.1, so the page's
requests are same-origin and carry ``Host: evil.example``) or a cross-site request
(``Origin: https://evil.example``). So with auth off an RPC must name a loopback
``Host`` (``localhost``, ``127.0.0.0/8``, ``[::1]``, any port; not checked with
``--insecure-allow-remote``, where remote names are the point) and carry no ``Origin``
but a loopback one (or, with ``--insecure-allow-remote``, the request's own host).
Otherwise 403. With auth on the token decides: a page cannot add the header without a
CORS preflight.
"""

from __future__ import annotations

from collections.abc import Sequence

from mqlite import errors
from mqlite.config import is_loopback


def host_name(authority: str) -> str:
    """The host of ``host[:port]`` / ``[v6][:port]``, lowercase, without a trailing dot."""
    text = authority.strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    name, sep, port = text.rpartition(":")
    if sep and port.isdigit() and ":" not in name:
        text = name
    return text.rstrip(".")


def origin_host(origin: str) -> str | None:
    """The host of an ``Origin`` value (``scheme://host[:port]``); None for ``null``."""
    scheme, sep, rest = origin.strip().partition("://")
    if not sep or not scheme:
        return None
    return host_name(rest.split("/", 1)[0])


def check_local_caller(headers: Sequence[tuple[bytes, bytes]], *, allow_remote: bool) -> None:
    """403 unless the request is a loopback caller's (see the module docstring)."""
    host = origin = None
    for key, value in headers:
        if key == b"host" and host is None:
            host = value.decode("latin-1")
        elif key == b"origin" and origin is None:
            origin = value.decode("latin-1")
    if host is not None and not allow_remote and not is_loopback(host_name(host)):
        raise errors.PermissionDenied(
            f"auth is off: only loopback Host names are served (got {host[:100]!r}); "
            "use 127.0.0.1 or localhost, or enable auth"
        )
    if origin is not None:
        seen = origin_host(origin)
        same_host = allow_remote and host is not None and seen == host_name(host)
        if seen is None or not (is_loopback(seen) or same_host):
            raise errors.PermissionDenied(
                f"auth is off: cross-site requests are refused (Origin {origin[:100]!r}); "
                "enable auth to serve browsers on other origins"
            )

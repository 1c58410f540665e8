"""Endpoint URLs for the remote clients, and the error a dead connection surfaces as.

Accepted spellings (the CLI's, original-behaviour §9):

- ``http://host[:port][/prefix]`` and ``https://…`` as given (default ports 80 / 443);
- ``mqlite://[token@]host[:port]`` → ``http``, default port 6754 (the broker's port);
- ``mqlites://[token@]host[:port]`` → ``https``, default port 443 (the broker terminates no
  TLS of its own, so TLS means a reverse proxy, which listens on 443 unless told otherwise).

A token may ride in the ``mqlite(s)://`` userinfo (percent-decoded); an ``http(s)://`` URL
with userinfo is refused, so a credential never hides in a URL that looks like a plain
address. Query strings and fragments are refused. ``Endpoint.origin`` is the canonical
spelling, so ``mqlite://h`` and ``http://h:6754/`` compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from mqlite import defaults, errors
from mqlite.config import process_environ

# Re-exported for the kombu transport, which may not import mqlite.config (its contract).
__all__ = ["ConnectionFailed", "Endpoint", "parse_endpoint", "process_environ", "resolve_token"]


class ConnectionFailed(errors.MQLiteError):
    """the broker could not be reached, or the connection was lost before it answered."""

    code = "unavailable"
    http_status = 503


_SCHEMES = {
    "http": ("http", 80),
    "https": ("https", 443),
    "mqlite": ("http", defaults.PORT),
    "mqlites": ("https", 443),
}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A parsed broker address: scheme ``http``/``https``, host, port, path prefix, token."""

    scheme: str
    host: str
    port: int
    base_path: str = ""
    token: str | None = None

    @property
    def origin(self) -> str:
        """The canonical ``scheme://host:port`` + prefix (no token, no trailing slash)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.base_path}"

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    def __repr__(self) -> str:  # never print the token
        return f"Endpoint({self.origin!r}, token={'set' if self.token else 'none'})"


def parse_endpoint(url: str) -> Endpoint:
    """Parse a broker URL (see the module docstring); a bad one is ``InvalidArgument``."""
    if not isinstance(url, str) or not url.strip():
        raise errors.InvalidArgument("endpoint must be a non-empty URL")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise errors.InvalidArgument(f"invalid endpoint {url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise errors.InvalidArgument(
            f"endpoint scheme must be http, https, mqlite or mqlites, got {url!r}"
        )
    real_scheme, default_port = _SCHEMES[scheme]
    if not parts.hostname:
        raise errors.InvalidArgument(f"endpoint {url!r} has no host")
    if parts.query or parts.fragment:
        raise errors.InvalidArgument("endpoint must not carry a query string or fragment")
    token: str | None = None
    if parts.username is not None or parts.password is not None:
        if scheme in ("http", "https"):
            raise errors.InvalidArgument(
                "put the token in the token argument, not in an http(s) URL "
                "(mqlite://TOKEN@host is the URL form that carries one)"
            )
        if parts.password is not None:
            raise errors.InvalidArgument("mqlite:// URLs carry a token as token@host, no password")
        token = unquote(parts.username or "") or None
    path = parts.path.rstrip("/")
    return Endpoint(real_scheme, parts.hostname, port or default_port, path, token)


def resolve_token(endpoint: Endpoint, token: str | None) -> str | None:
    """The credential to send: ``None`` takes the URL's (if any); ``""`` sends none, even
    one the URL carries; a token that differs from the URL's is refused."""
    if token is not None and not isinstance(token, str):
        raise errors.InvalidArgument("token must be a string")
    if token and endpoint.token and token != endpoint.token:
        raise errors.InvalidArgument(
            "the endpoint URL and the token argument name different tokens"
        )
    chosen = endpoint.token if token is None else token
    if chosen and any(c in chosen for c in "\r\n\x00"):
        raise errors.InvalidArgument("token must not contain CR, LF or NUL")
    return chosen or None

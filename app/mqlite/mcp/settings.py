"""``mqlite-mcp``'s configuration: read once from the environment mapping ``main`` passes.

- ``MQLITE_ENDPOINT``: the broker (default ``http://127.0.0.1:6754``), any spelling the
  SDK accepts (``http(s)://``, ``mqlite://[token@]host``); a bad one fails startup.
- ``MQLITE_TOKEN``, or ``MQLITE_TOKEN_FILE`` naming a file that holds it (or a systemd
  credential ``mqlite-token``): the credential every call forwards; the broker's
  authorization decides what each tool may do. Exactly one token; never printed.
- ``--http HOST:PORT``: serve streamable HTTP instead of stdio; needs a token, which the
  listener then requires as its bearer. ``MQLITE_MAX_CONNECTIONS`` caps its open
  connections as it caps the broker's (default 4096).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mqlite import defaults, errors
from mqlite.config import ConfigError, parse_addr, read_secret
from mqlite.config import _int as int_setting  # the broker's own parser of the same variable
from mqlite.sdk.endpoint import parse_endpoint, resolve_token

DEFAULT_ENDPOINT = f"http://127.0.0.1:{defaults.PORT}"


@dataclass(frozen=True, slots=True)
class Settings:
    endpoint: str  # as configured (may carry a token in an mqlite:// URL)
    origin: str  # canonical, credential-free: what logs and messages show
    token: str | None = None
    http: tuple[str, int] | None = None
    max_connections: int = defaults.MAX_CONNECTIONS

    def __repr__(self) -> str:  # never print the token
        return f"Settings({self.origin!r}, token={'set' if self.token else 'none'})"

    @classmethod
    def from_env(cls, environ: Mapping[str, str], http: str | None = None) -> Settings:
        endpoint = environ.get("MQLITE_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
        try:
            ep = parse_endpoint(endpoint)
        except errors.MQLiteError as exc:
            raise ConfigError(f"MQLITE_ENDPOINT: {exc.message}") from None
        raw, source = read_secret(environ, "MQLITE_TOKEN", "mqlite-token")
        token = (raw or "").strip() or None
        if token is not None and any(c.isspace() or c == "," for c in token):
            raise ConfigError(f"{source} must hold exactly one token")
        try:
            token = resolve_token(ep, token)
        except errors.MQLiteError as exc:
            raise ConfigError(f"MQLITE_ENDPOINT and {source}: {exc.message}") from None
        addr = None
        if http is not None:
            addr = parse_addr(http, name="--http")
            if not token:
                raise ConfigError(
                    "--http needs MQLITE_TOKEN (or MQLITE_TOKEN_FILE): the listener requires "
                    "the broker token as its bearer"
                )
        cap = int_setting(environ, "MQLITE_MAX_CONNECTIONS", defaults.MAX_CONNECTIONS, minimum=1)
        return cls(endpoint, ep.origin, token, addr, cap)

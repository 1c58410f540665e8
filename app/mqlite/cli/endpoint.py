"""Mode selection: embedded on ``MQLITE_DB`` or client of a broker, and which token to send.

Client mode wins whenever an endpoint is known (``--endpoint`` or ``MQLITE_ENDPOINT``).
The ambient ``MQLITE_TOKEN`` belongs to ``MQLITE_ENDPOINT`` only: an ``--endpoint`` naming a
different broker gets no token (with a warning) unless ``--token`` is given. Two spellings
of one broker (a trailing slash, an explicit default port, ``mqlite://h`` vs
``http://h:6754``) are the same target: identity is the SDK's canonical ``origin``.
``--token=`` (empty) sends no credential at all, not even one embedded in the URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mqlite import errors
from mqlite.config import DEFAULT_DB
from mqlite.sdk.endpoint import Endpoint, parse_endpoint


class EndpointError(ValueError):
    """An endpoint the SDK cannot dial; ``flag`` says whether a flag (usage) named it."""

    def __init__(self, message: str, *, flag: bool = True) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass(frozen=True, slots=True)
class Target:
    """Where a command runs: ``endpoint`` None = embedded on ``dsn``."""

    dsn: str
    endpoint: str | None = None  # canonical origin, never carrying a credential
    token: str | None = None
    warning: str = ""
    dsn_defaulted: bool = False  # no MQLITE_DB: the default ./mq.db (the CLI says so)

    @property
    def remote(self) -> bool:
        return self.endpoint is not None


def _parse(text: str, source: str) -> Endpoint:
    try:
        return parse_endpoint(text)
    except errors.MQLiteError as exc:
        raise EndpointError(f"{source}: {exc.message}", flag=source.startswith("-")) from None


def same_broker(a: str, b: str) -> bool:
    """Do two endpoint spellings dial the same broker?"""
    try:
        return parse_endpoint(a).origin == parse_endpoint(b).origin
    except errors.MQLiteError:
        return False


def resolve(
    environ: Mapping[str, str], endpoint_flag: str | None, token_flag: str | None
) -> Target:
    """Pick the mode and the credential (flags win over the environment)."""
    configured_dsn = environ.get("MQLITE_DB", "").strip()
    dsn = configured_dsn or DEFAULT_DB
    env_endpoint = environ.get("MQLITE_ENDPOINT", "").strip()
    env_token = environ.get("MQLITE_TOKEN", "").strip()
    flag_endpoint = (endpoint_flag or "").strip()
    if endpoint_flag is not None and not flag_endpoint:
        raise EndpointError("--endpoint is empty")
    if flag_endpoint:
        ep = _parse(flag_endpoint, "--endpoint")
    elif env_endpoint:
        ep = _parse(env_endpoint, "MQLITE_ENDPOINT")
    else:
        return Target(dsn, dsn_defaulted=not configured_dsn)
    if token_flag is not None:  # explicit: "" sends nothing, not even the URL's credential
        return Target(dsn, ep.origin, token_flag.strip() or None)
    if ep.token:
        return Target(dsn, ep.origin, ep.token)
    if not flag_endpoint or not env_token:
        return Target(dsn, ep.origin, env_token or None)
    if env_endpoint and same_broker(env_endpoint, flag_endpoint):
        return Target(dsn, ep.origin, env_token)
    warning = (
        f"MQLITE_TOKEN is not sent to {ep.origin}: it belongs to "
        f"{'MQLITE_ENDPOINT ' + env_endpoint if env_endpoint else 'no endpoint (unset)'}; "
        "pass --token to authenticate there"
    )
    return Target(dsn, ep.origin, None, warning)

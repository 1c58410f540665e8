"""The audit trail's view of an HTTP request: who (the principal's actor) and which request.

Only routes that change state outside message operations (``AUDITED``) pay for this; a
Send, Receive or settlement never reads a header or draws a random id here. The request
id is the caller's ``X-Request-Id`` when it is a short token of safe characters (so a
client can find its own change in the trail), else a fresh one; either way it goes back
in the response's ``X-Request-Id`` and into the access-log line, tying the three together.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence

from mqlite.engine.audit import Actor
from mqlite.server.auth import Principal

# The verbs whose engine call writes an audit row (engine/audit.py).
AUDITED = frozenset(
    {
        "AdminService/CreateQueue",
        "AdminService/EnsureQueue",
        "AdminService/DeleteQueue",
        "AdminService/Subscribe",
        "AdminService/Unsubscribe",
        "AdminService/Purge",
        "AdminService/Redrive",
        "AdminService/CreateSchedule",
        "AdminService/DeleteSchedule",
        "AdminService/CreatePush",
        "AdminService/DeletePush",
        "AuthService/CreateKey",
        "AuthService/RevokeKey",
    }
)

MAX_REQUEST_ID_CHARS = 64
_SAFE_ID = re.compile(rf"[A-Za-z0-9._:/+=@-]{{1,{MAX_REQUEST_ID_CHARS}}}")


def request_id(headers: Sequence[tuple[bytes, bytes]]) -> str:
    """The caller's ``X-Request-Id`` if exactly one, safe and short; else a new one (a
    hostile or malformed value is replaced, never refused and never stored)."""
    given = [v for k, v in headers if k.lower() == b"x-request-id"]
    if len(given) == 1:
        try:
            text = given[0].decode("ascii")
        except UnicodeDecodeError:
            text = ""
        if _SAFE_ID.fullmatch(text):
            return text
    return secrets.token_hex(8)


def actor_of(principal: Principal, rid: str) -> Actor:
    return Actor(principal.actor, rid)

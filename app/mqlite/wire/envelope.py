"""The error envelope ``{"code": ..., "message": ..., "reason": ...}`` in both directions.

The server writes ``error_body(exc)`` with ``exc.http_status``; the SDK turns any non-200
answer back into the same ``MQLiteError`` class via ``errors.BY_CODE``, refined by
``errors.BY_REASON`` when the envelope names a reason (``QueueNotFound`` travels as
``not_found`` + ``queue_not_found``). ``reason`` is additive: the original broker never
sends it (its envelopes map to the code's class) and its clients ignore it. A body that
is not an envelope (a proxy's page) falls back on the HTTP status. Embedded and remote
callers catch the same exceptions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType

from mqlite import errors
from mqlite.errors import MQLiteError

from .codec import dumps

# HTTP status -> class when the body carries no known code. 409 is deliberately absent:
# it has six meanings, and guessing one would let a caller "handle" the wrong conflict.
BY_STATUS: Mapping[int, type[MQLiteError]] = MappingProxyType(
    {
        400: errors.InvalidArgument,
        401: errors.Unauthenticated,
        403: errors.PermissionDenied,
        404: errors.NotFound,
        405: errors.Unimplemented,
        413: errors.MessageTooLarge,
        499: errors.Canceled,
        500: errors.Internal,
        503: errors.OutcomeUnknown,
    }
)

_SNIPPET = 200


def error_body(exc: MQLiteError) -> bytes:
    """The JSON envelope for ``exc`` (send it with ``exc.http_status``), newline-terminated.

    ``reason`` is written only for a subclass the receiving SDK can rebuild from it."""
    envelope: dict[str, object] = {"code": exc.code, "message": exc.message}
    if exc.reason and errors.BY_REASON.get(exc.reason) is type(exc):
        envelope["reason"] = exc.reason
    if isinstance(exc, errors.ResourceExhausted):  # Retry-After, for clients without headers
        envelope["retry_after_s"] = exc.retry_after_s
    return dumps(envelope)


def error_from_response(status: int, body: bytes) -> MQLiteError:
    """Rebuild the error a broker answered with ``status`` and ``body``."""
    code = message = reason = ""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        if isinstance(value.get("code"), str):
            code = value["code"]
        if isinstance(value.get("message"), str):
            message = value["message"]
        if isinstance(value.get("reason"), str):
            reason = value["reason"]
    cls = errors.BY_CODE.get(code) or BY_STATUS.get(status) or errors.Internal
    refined = errors.BY_REASON.get(reason)
    if refined is not None and refined.code == code:
        cls = refined
    if not message and code not in errors.BY_CODE:
        text = body[:_SNIPPET].decode("utf-8", "replace").strip()
        message = f"HTTP {status}" + (f": {text}" if text else "")
    if cls is errors.ResourceExhausted:
        after = value.get("retry_after_s") if isinstance(value, dict) else None
        ok = isinstance(after, int) and not isinstance(after, bool) and 0 <= after <= 3600
        return errors.ResourceExhausted(message or None, retry_after_s=after if ok else 1)  # type: ignore[arg-type]
    return cls(message or None)

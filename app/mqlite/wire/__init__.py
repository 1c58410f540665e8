"""The HTTP wire contract, shared by the server and the HTTP SDK (leaves + msgspec only).

Each JSON object is declared ONCE, as a ``msgspec.Struct``; everything else is derived:

- ``queue_service`` / ``admin_service`` / ``auth_service``: one block per RPC, its
  request and response Structs (field order = JSON key order, a ``Doc`` per field, with
  ``of``/``value`` conversions to ``mqlite.types`` values) and its typed ``Route``
  constant (path, permission, summary); ``messages``: the Message views they share.
- ``routes``: ``ROUTES`` (discovery order) and ``ROUTES_BY_PATH``.
- ``codec``: ``decode_request`` (strict; ``InvalidArgument``), ``encode_response``,
  ``encode_request``, ``decode_response`` (lenient); ``explain`` renders the exact error.
- ``envelope``: ``error_body`` / ``error_from_response`` (the same class both sides).
- ``openapi``: ``openapi_document(version)`` from the same Structs.
"""

from . import (
    admin_service,
    audit_service,
    auth_service,
    observability,
    push_service,
    queue_service,
    schedule_service,
)
from .admin_service import *  # noqa: F403 (each service module lists its __all__)
from .audit_service import *  # noqa: F403
from .auth_service import *  # noqa: F403
from .base import PATH_PREFIX, Route
from .codec import (
    decode_request,
    decode_response,
    dumps,
    encode_request,
    encode_response,
    json_object,
)
from .envelope import BY_STATUS, error_body, error_from_response
from .messages import MessageJSON, PeekedMessage, ReceivedMessage, SampleMessage, out_messages
from .observability import *  # noqa: F403
from .openapi import openapi_document
from .push_service import *  # noqa: F403
from .queue_info import QueueConfigJSON, QueueInfoJSON
from .queue_service import *  # noqa: F403
from .queue_service import SettleResponse
from .routes import ROUTES, ROUTES_BY_PATH
from .schedule_service import *  # noqa: F403

# ``{"ok": true}`` answers (the settle verbs, Cancel, RevokeKey) under their older name.
OkResponse = SettleResponse

__all__ = [
    "BY_STATUS",
    "PATH_PREFIX",
    "ROUTES",
    "ROUTES_BY_PATH",
    "MessageJSON",
    "OkResponse",
    "PeekedMessage",
    "QueueConfigJSON",
    "QueueInfoJSON",
    "ReceivedMessage",
    "Route",
    "SampleMessage",
    "decode_request",
    "decode_response",
    "dumps",
    "encode_request",
    "encode_response",
    "error_body",
    "error_from_response",
    "json_object",
    "openapi_document",
    "out_messages",
]
__all__ += queue_service.__all__
__all__ += admin_service.__all__
__all__ += auth_service.__all__
__all__ += observability.__all__
__all__ += schedule_service.__all__
__all__ += audit_service.__all__
__all__ += push_service.__all__

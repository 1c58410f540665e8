"""The route table: every RPC in discovery order, and each by path.

Order is the discovery card's ``endpoints`` order (the original's registration order,
with the v0.3.3 DeleteQueue/Unsubscribe and the AuthService routes added after their
siblings): each service module lists its own routes, declared next to their Structs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from . import (
    admin_service,
    audit_service,
    auth_service,
    observability,
    push_service,
    queue_service,
    schedule_service,
)
from .base import Route

ROUTES: tuple[Route[Any, Any], ...] = (
    *queue_service.ROUTES,
    *admin_service.ROUTES,
    *observability.ROUTES,
    *auth_service.ROUTES,
    *schedule_service.ROUTES,
    *audit_service.ROUTES,
    *push_service.ROUTES,
)

ROUTES_BY_PATH: Mapping[str, Route[Any, Any]] = MappingProxyType({r.path: r for r in ROUTES})

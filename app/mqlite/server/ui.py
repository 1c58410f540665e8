"""``GET /ui/...``: the static admin console, from a manifest read once at startup.

Requests are looked up by exact relative path in a dict of the files the package ships;
nothing is ever joined onto a filesystem path, so ``..``, encoded slashes, absolute paths
or symlinks cannot reach outside ``mqlite/server/console`` (tests/e2e/test_console_routes.py
sends them raw). The page is auth-exempt (api-reference "Open endpoints"): it holds no
data; every API call it makes carries the token the operator pastes.

Every response carries the console's security headers: a CSP allowing only same-origin
scripts, styles and fetches (no inline script or style, no eval, no framing), nosniff,
no referrer. ``Cache-Control: no-cache`` plus an ETag: a broker upgrade is picked up on the
next load, an unchanged file costs a 304.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from types import MappingProxyType

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from mqlite import errors, wire

PACKAGE = "mqlite.server.console"
PREFIX = "/ui/"

CONTENT_TYPES: Mapping[str, str] = MappingProxyType(
    {
        ".html": "text/html; charset=utf-8",
        ".css": "text/css; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
        ".svg": "image/svg+xml",
        ".txt": "text/plain; charset=utf-8",
    }
)

CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)

SECURITY_HEADERS: Mapping[str, str] = MappingProxyType(
    {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Cache-Control": "no-cache",
    }
)


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


def _walk(node: Traversable, prefix: str) -> dict[str, Asset]:
    found: dict[str, Asset] = {}
    for child in node.iterdir():
        rel = f"{prefix}{child.name}"
        if child.is_dir():
            if child.name != "__pycache__":
                found.update(_walk(child, rel + "/"))
            continue
        suffix = "." + child.name.rsplit(".", 1)[-1] if "." in child.name else ""
        content_type = CONTENT_TYPES.get(suffix)
        if content_type is None:  # __init__.py and anything not meant for a browser
            continue
        body = child.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        found[rel] = Asset(body, content_type, etag)
    return found


def load_assets() -> Mapping[str, Asset]:
    """Every servable file of the console package, by path relative to it."""
    assets = _walk(resources.files(PACKAGE), "")
    if "index.html" not in assets:
        raise errors.Internal("the console package has no index.html")
    return MappingProxyType(assets)


def _not_found(path: str) -> Response:
    exc = errors.NotFound(f"no such path: {path}")
    return Response(wire.error_body(exc), status_code=404, media_type="application/json")


class Console:
    """The /ui endpoints over one immutable manifest."""

    def __init__(self, assets: Mapping[str, Asset] | None = None) -> None:
        self.assets = assets if assets is not None else load_assets()

    async def root(self, request: Request) -> Response:
        """``/ui`` → ``/ui/``: the page's relative module URLs resolve under the prefix."""
        if request.method not in ("GET", "HEAD"):
            return self._method_not_allowed()
        return RedirectResponse(PREFIX, status_code=308, headers=dict(SECURITY_HEADERS))

    async def asset(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return self._method_not_allowed()
        path = request.url.path
        rel = path[len(PREFIX) :] if path.startswith(PREFIX) else None
        if rel == "":
            rel = "index.html"
        asset = self.assets.get(rel) if rel is not None else None
        if asset is None:
            return _not_found(path)
        headers = {**SECURITY_HEADERS, "ETag": asset.etag}
        if request.headers.get("if-none-match") == asset.etag:
            return Response(status_code=304, headers=headers)
        return Response(asset.body, media_type=asset.content_type, headers=headers)

    @staticmethod
    def _method_not_allowed() -> Response:
        exc = errors.Unimplemented("GET required")
        return Response(
            wire.error_body(exc),
            status_code=405,
            media_type="application/json",
            headers={"Allow": "GET, HEAD"},
        )

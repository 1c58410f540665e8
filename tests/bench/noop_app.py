"""The HTTP benchmark's ceiling: a starlette no-op POST route on the broker's own stack.

``http_bench.py`` starts this as a subprocess::

    .venv/bin/python tests/bench/noop_app.py --addr 127.0.0.1:PORT

It is served exactly as ``mqlite serve`` serves the broker: gunicorn configured by
``mqlite.server.serve.gunicorn_options`` (one worker of class
``mqlite.server.worker.Worker``: uvicorn with the same loop/http/lifespan settings), only
the ASGI app differs. The single route reads the whole body and answers ``{}`` as JSON,
so what it measures is the cost of gunicorn + uvicorn + starlette per small POST.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "app"))

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse, Response  # noqa: E402
from starlette.routing import Route  # noqa: E402

from mqlite.config import Settings  # noqa: E402
from mqlite.server.serve import _Gunicorn, gunicorn_options  # noqa: E402

PATH = "/noop"


async def noop(request: Request) -> Response:
    await request.body()
    return JSONResponse({})


app = Starlette(routes=[Route(PATH, noop, methods=["POST"])])


class _NoopGunicorn(_Gunicorn):
    """``mqlite serve``'s gunicorn application with the no-op app in the worker instead
    of ``BrokerApp``. The worker reads the connection cap's settings and the per-key
    shares off the app it serves, so the no-op app carries the same (unused) ones."""

    def load(self) -> Starlette:
        app.settings = self._settings  # type: ignore[attr-defined]
        app.shares = SimpleNamespace(cap=None)  # type: ignore[attr-defined]
        return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:0", help="HOST:PORT to listen on")
    args = parser.parse_args(argv)
    settings = Settings(addr=args.addr)
    _NoopGunicorn(settings, gunicorn_options(settings)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())

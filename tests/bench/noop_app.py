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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:0", help="HOST:PORT to listen on")
    args = parser.parse_args(argv)
    options = gunicorn_options(Settings(addr=args.addr))
    _Gunicorn(app, options).run()  # type: ignore[arg-type]  # any ASGI app will do
    return 0


if __name__ == "__main__":
    sys.exit(main())

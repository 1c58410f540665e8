"""The gunicorn master stays lean: the app, the engine and uvicorn load only in the worker.

A forked worker's inherited pages count in the RSS of BOTH processes, so everything the
master imports is paid twice in the appliance's idle memory (target < 72 MiB for the tree).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from e2e_support import BrokerFactory

# Native extensions that only the worker needs; their .so appear in /proc/PID/maps once
# imported, which is what a real process (not a simulation of one) can be checked for.
WORKER_ONLY_EXTENSIONS = ("_re2", "uvloop", "httptools")


def _mapped_extensions(pid: int) -> set[str]:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {ext for ext in WORKER_ONLY_EXTENSIONS if f"/{ext}" in maps}


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def test_master_maps_no_app_extension_while_the_worker_serves(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory()
    assert broker.http.get("/healthz").text == "ok"
    (worker,) = _children(broker.proc.pid)
    assert _mapped_extensions(broker.proc.pid) == set()
    assert _mapped_extensions(worker) == set(WORKER_ONLY_EXTENSIONS)


def test_import_mqlite_and_connect_load_no_engine() -> None:
    """ARCHITECTURE: ``import mqlite`` and ``mqlite.connect`` load no engine, sqlite3, re2
    or APScheduler (PEP 562 lazy attributes)."""
    code = "import json, sys, mqlite; mqlite.connect; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    loaded = set(json.loads(out.stdout))
    heavy = {"mqlite.engine", "sqlite3", "re2", "apscheduler", "mqlite.server", "starlette"}
    assert loaded & heavy == set()
    assert "mqlite.sdk.http" in loaded


def test_lazy_attributes_resolve_to_the_defining_objects() -> None:
    import mqlite
    from mqlite.engine import Engine
    from mqlite.engine.engine import Engine as DefinedEngine
    from mqlite.sdk.embedded import open_embedded

    assert mqlite.open_embedded is open_embedded
    assert Engine is DefinedEngine
    assert set(mqlite.__all__) <= set(dir(mqlite)) | {"__version__"}
    for name in mqlite.__all__:
        assert getattr(mqlite, name) is not None


# What the worker loads only when it needs it: croniter (+ dateutil, six) once a schedule
# exists, difflib once a request has an unknown field. Loaded at start they cost the idle
# worker ~0.5 MB of the appliance's idle tree budget (test_image.py).
_RARE_PATH_MODULES = {"croniter", "dateutil", "six", "difflib"}

_WORKER_START = """
import asyncio, json, sys
from mqlite.config import Settings
from mqlite.server.app import BrokerApp
import mqlite.server.drain_worker

env = {"MQLITE_DB": sys.argv[1], "MQLITE_TOKENS": "mqk_lean_" + "a" * 24}
app = BrokerApp(Settings.from_env(env))

async def lifespan():
    events = iter([{"type": "lifespan.startup"}])
    async def receive():
        try:
            return next(events)
        except StopIteration:
            await asyncio.sleep(1.5)  # the maintenance loop's first passes (cron firing too)
            return {"type": "lifespan.shutdown"}
    async def send(message):
        pass
    await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)

asyncio.run(lifespan())
print(json.dumps(sorted(sys.modules)))
"""


def test_an_idle_worker_loads_no_cron_parser_and_no_difflib(tmp_path: Path) -> None:
    """The worker's app, started with its background loops and no schedule, has not
    imported the modules only a schedule or a refused request needs."""
    db = f"file:{tmp_path / 'mq.db'}"
    out = subprocess.run(
        [sys.executable, "-c", _WORKER_START, db], capture_output=True, check=True, timeout=60
    )
    loaded = {name.split(".")[0] for name in json.loads(out.stdout.splitlines()[-1])}
    assert loaded & _RARE_PATH_MODULES == set()
    assert "mqlite" in loaded and "apscheduler" in loaded  # it did start the app and loops

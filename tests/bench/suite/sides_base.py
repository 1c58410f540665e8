"""The remote SDKs with the transports of an older commit (``run.py --sdk-base REV``),
measured in the same run as the current ones: client CPU per message before and after a
change of the HTTP path, with the host's noise shared.

Only the transport modules and the clients' request loops come from REV
(``sdk/transport.py`` + ``sdk/http.py``; ``sdk/aio_transport.py`` + ``sdk/aio.py``),
read with ``git show`` into a temporary directory and imported under other names, their
imports of each other rewritten; the call table, wire codec and methods are today's, so
the difference is the HTTP path alone. The default REV is the last commit before the
transports were rewritten (issue 29): ``http.client`` for sync, asyncio streams for aio.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from sides_aio import MqliteHttpAio
from sides_local import MqliteHttpSdk

DEFAULT_REV = "d5738ab"  # main before issue 29's transports
REPO = Path(__file__).resolve().parents[3]
# module in the tree -> the name it is imported under here
RENAMES = {
    "mqlite.sdk.transport": "mqlite_base_transport",
    "mqlite.sdk.aio_transport": "mqlite_base_aio_transport",
}
FILES = {  # module name here -> path at REV
    "mqlite_base_transport": "app/mqlite/sdk/transport.py",
    "mqlite_base_aio_transport": "app/mqlite/sdk/aio_transport.py",
    "mqlite_base_http": "app/mqlite/sdk/http.py",
    "mqlite_base_aio": "app/mqlite/sdk/aio.py",
}


def missing(rev: str) -> str | None:
    for path in FILES.values():
        done = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{rev}:{path}"],
                              capture_output=True)  # fmt: skip
        if done.returncode != 0:
            return f"{path} not found at {rev} (git)"
    return None


def load(rev: str, tmp: Path) -> dict[str, ModuleType]:
    """Import REV's transports and clients; {name: module}."""
    out: dict[str, ModuleType] = {}
    for name, path in FILES.items():  # transports first: the clients import them
        source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"],
                                capture_output=True, text=True, check=True).stdout  # fmt: skip
        for old, new in RENAMES.items():
            source = source.replace(f"from {old} import", f"from {new} import")
        file = tmp / f"{name}.py"
        file.write_text(source)
        spec = importlib.util.spec_from_file_location(name, file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        out[name] = module
    return out


class MqliteHttpSdkBase(MqliteHttpSdk):
    """``MqliteHttpSdk`` on REV's ``HttpClient``."""

    name = "mqlite-http-sdk-base"

    def __init__(self, server: Any, modules: dict[str, ModuleType]) -> None:
        super().__init__(server)
        self.cls = modules["mqlite_base_http"].HttpClient

    def connect(self) -> Any:
        return self.cls(f"http://127.0.0.1:{self.server.port}", self.server.token)


class MqliteHttpAioBase(MqliteHttpAio):
    """``MqliteHttpAio`` on REV's ``AsyncClient``."""

    name = "mqlite-http-aio-base"

    def __init__(self, server: Any, modules: dict[str, ModuleType]) -> None:
        super().__init__(server)
        self.cls = modules["mqlite_base_aio"].AsyncClient

    def connect(self) -> Any:
        return self.cls(f"http://127.0.0.1:{self.server.port}", self.server.token)

"""The transport stays optional: ``import mqlite`` loads no kombu or Celery, and
``import mqlite.kombu`` loads no engine until an embedded connection opens."""

from __future__ import annotations

import json
import subprocess
import sys

OPTIONAL = ("kombu", "celery", "mqlite.kombu")
HEAVY = ("mqlite.engine", "sqlite3", "_sqlite3", "re2", "simpleeval", "apscheduler")


def loaded_after(code: str, prefixes: tuple[str, ...]) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    modules = json.loads(out.strip().splitlines()[-1])
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


def test_import_mqlite_loads_no_kombu_or_celery() -> None:
    assert loaded_after("import mqlite\nmqlite.connect", OPTIONAL) == []


def test_the_transport_alias_and_a_remote_connection_load_no_engine() -> None:
    code = (
        "import mqlite.kombu\n"
        "from kombu import Connection\n"
        "c = Connection('mqlite+http://127.0.0.1:9')\n"
        "c.transport\n"
    )
    assert loaded_after(code, HEAVY) == []

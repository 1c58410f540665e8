"""The generated reference tables are complete and current (issue 31 items 4 and 6): every
``MQLITE_*`` variable the code reads is in ``mqlite.env_reference`` and so in the one
table of docs/operations.md, and both generated sections match their generator."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from mqlite import config, env_reference

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "app" / "mqlite"


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_docs_tables", REPO / "scripts" / "gen_docs_tables.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs_tables"] = module
    spec.loader.exec_module(module)
    return module


def variables_read_by_the_code() -> set[str]:
    """Every quoted ``"MQLITE_…"`` literal under app/mqlite, plus the ``_FILE`` form of
    every variable read through ``config.read_secret``."""
    found: set[str] = set()
    secrets: set[str] = set()
    for path in APP.rglob("*.py"):
        text = path.read_text()
        found |= set(re.findall(r'"(MQLITE_[A-Z0-9_]*[A-Z0-9])"', text))
        secrets |= set(re.findall(r'read_secret\(\s*environ,\s*"(MQLITE_[A-Z0-9_]+)"', text))
    found |= {name + "_FILE" for name in secrets}
    return found


def test_every_variable_the_code_reads_is_in_the_reference() -> None:
    read = variables_read_by_the_code()
    assert {"MQLITE_DB", "MQLITE_TOKENS_FILE", "MQLITE_METRICS"} <= read  # the scan works
    missing = read - env_reference.names()
    assert not missing, f"add to mqlite/env_reference.py: {sorted(missing)}"
    unknown = env_reference.names() - read - {v.name + "_FILE" for v in env_reference.VARIABLES}
    assert not unknown, f"listed but never read: {sorted(unknown)}"


def test_the_on_off_values_documented_are_the_ones_accepted() -> None:
    """MQLITE_METRICS=yes was accepted but undocumented: the reference lists them all."""
    for word in (*config._TRUE, *config._FALSE):
        assert word in re.findall(r"[a-z0-9]+", env_reference.ON_OFF)


def test_the_generated_sections_are_current() -> None:
    gen = _generator()
    assert gen.current(gen.OPS_PAGE, "env-vars") == gen.render_env()
    from mqlite import wire
    from mqlite.version import VERSION

    assert gen.current(gen.HTTP_PAGE, "rpc-reference") == gen.render_http(
        wire.openapi_document(VERSION)
    )

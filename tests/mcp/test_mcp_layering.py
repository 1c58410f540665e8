"""The MCP SDK stays an optional extra: only ``mqlite.mcp`` imports it, statically
(import-linter, with every other module of mqlite as a source) and at run time."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path

from mcp_support import modules_loaded_by

import mqlite

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
CONTRACT = "Only mqlite.mcp knows the MCP SDK"
EXTRA_ONLY = ("mcp", "mcp_types", "jsonschema", "pydantic", "httpx2", "mqlite.mcp")


def contract() -> dict[str, list[str]]:
    contracts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"][
        "contracts"
    ]
    (found,) = [c for c in contracts if c["name"].startswith(CONTRACT)]
    return dict(found)


def test_the_contract_covers_every_other_module_of_mqlite() -> None:
    """A new top-level module (a transport, a helper) fails here until it is a source of
    the contract, so it cannot import the extra unnoticed."""
    modules = {f"mqlite.{m.name}" for m in pkgutil.iter_modules(mqlite.__path__)}
    assert set(contract()["source_modules"]) == modules - {"mqlite.mcp"}


def test_the_contract_forbids_the_sdk_and_what_only_it_brings() -> None:
    assert set(contract()["forbidden_modules"]) == set(EXTRA_ONLY)


def test_the_broker_the_sdk_and_the_cli_load_nothing_of_the_extra() -> None:
    """At run time too: the import-time paths of ``mqlite serve``, the CLI and a remote
    client (lazy attributes included) never touch the MCP SDK."""
    loaded = modules_loaded_by(
        "import mqlite, mqlite.aio, mqlite.cli.main, mqlite.server.app, mqlite.sdk.http\n"
        "mqlite.connect('http://127.0.0.1:9', 'tok').close()\n"
        "mqlite.Receiver"
    )
    assert [m for m in loaded if any(m == x or m.startswith(x + ".") for x in EXTRA_ONLY)] == []

"""The console ships as package data: every file in ``mqlite/server/console`` must match a
``package-data`` glob of pyproject.toml, or a wheel (the container image installs one)
would serve a console with missing modules while the editable checkout works."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from mqlite.server import ui

REPO = Path(__file__).resolve().parents[2]
CONSOLE = REPO / "app" / "mqlite" / "server" / "console"


def _matches(path: str, glob: str) -> bool:
    """setuptools' package-data semantics: ``*`` stays within one path segment."""
    parts, pattern = path.split("/"), glob.split("/")
    return len(parts) == len(pattern) and all(map(fnmatch.fnmatchcase, parts, pattern))


def test_every_console_file_is_declared_package_data() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["mqlite.server.console"]
    files = [
        p.relative_to(CONSOLE).as_posix()
        for p in CONSOLE.rglob("*")
        if p.is_file() and p.name != "__init__.py" and "__pycache__" not in p.parts
    ]
    assert files
    undeclared = [f for f in files if not any(_matches(f, g) for g in globs)]
    assert not undeclared, f"add a package-data glob for {undeclared}"


def test_the_manifest_serves_exactly_the_browser_files() -> None:
    assets = ui.load_assets()
    on_disk = {
        p.relative_to(CONSOLE).as_posix()
        for p in CONSOLE.rglob("*")
        if p.is_file() and p.suffix in ui.CONTENT_TYPES
    }
    assert set(assets) == on_disk
    assert all(".." not in rel and not rel.startswith("/") for rel in assets)

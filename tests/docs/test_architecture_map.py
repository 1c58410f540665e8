"""docs/architecture.md is a map: every path it names must exist, so a move or a rename
that forgets the map fails here instead of misleading the next reader."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
# A path in backticks: starts at a top-level folder of the repo, or is a root file.
PATH = re.compile(r"`((?:app|tests|docs|scripts|ops|deploy)/[^`\s]*|pyproject\.toml|Makefile)`")


def named_paths(text: str) -> list[str]:
    return PATH.findall(text)


def test_every_path_the_architecture_page_names_exists() -> None:
    paths = named_paths(PAGE.read_text())
    assert len(paths) > 40, "the map names the places it maps"
    missing = sorted({p for p in paths if not (ROOT / p).exists()})
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_check_sees_a_missing_path() -> None:
    assert named_paths("see `app/mqlite/nowhere.py` and `pyproject.toml`") == [
        "app/mqlite/nowhere.py",
        "pyproject.toml",
    ]


def test_the_readme_links_the_map_and_the_contributing_guide() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "(docs/architecture.md)" in readme and "(docs/contributing.md)" in readme

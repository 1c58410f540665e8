"""The transport seam (issue 27): the server and the scheduler reach the engine through its
parts, never its plumbing.

Two guards, each proven able to fail: the import-linter contract ``engine-seam`` (a probe
import of ``mqlite.engine.store`` planted in a temporary copy of the package breaks it),
and a scan for ``.store`` / ``.writer`` / ``.notifier`` attribute reaches in the server and
the scheduler (mypy catches them too where the value is typed ``Broker`` or ``Passes``;
the scan also covers code that holds the concrete ``Engine``, such as the app's lifespan).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from contract_probe import assert_contract_catches, copy_of_package

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "app" / "mqlite"
PLUMBING = {"store", "writer", "notifier"}
SEAM_SOURCES = [*sorted((APP / "server").rglob("*.py")), APP / "scheduling.py"]


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    return copy_of_package(tmp_path)


def test_the_seam_contract_holds_and_breaks_on_a_probe_import(copy: Path) -> None:
    assert_contract_catches(copy, "engine-seam", "server/queue_handlers.py", "mqlite.engine.store")


def plumbing_reaches(source: str) -> list[str]:
    """``x.store``, ``x.writer``, ``x.notifier`` (as attributes, never bare names)."""
    return [
        f"line {node.lineno}: .{node.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr in PLUMBING
    ]


@pytest.mark.parametrize("path", SEAM_SOURCES, ids=lambda p: str(p.relative_to(APP)))
def test_no_plumbing_reached_from_the_server_or_the_scheduler(path: Path) -> None:
    assert plumbing_reaches(path.read_text(encoding="utf-8")) == []


def test_the_scan_sees_a_reach_into_the_store() -> None:
    planted = textwrap.dedent(
        """
        def lifespan(engine):
            path = engine.store.location.path
            engine.notifier.close()
        """
    )
    assert plumbing_reaches(planted) == ["line 3: .store", "line 4: .notifier"]

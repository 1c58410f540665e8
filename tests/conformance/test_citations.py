"""docs/conformance.md cites tests as ``tests/conformance/<file>.py::<test_name>``; every
cited test must exist (collected with ast, so nothing is imported or run)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "conformance.md"
CITATION = re.compile(r"(tests/conformance/[A-Za-z0-9_]+\.py)::([A-Za-z_][A-Za-z0-9_]*)")


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            names.add(node.name)
    return names


def _citations() -> list[tuple[str, str]]:
    return CITATION.findall(DOC.read_text())


def test_conformance_doc_cites_tests_that_exist():
    citations = _citations()
    assert len(citations) >= 100, "docs/conformance.md should cite its tests"
    cache: dict[str, set[str]] = {}
    missing = []
    for file, name in citations:
        path = REPO / file
        if not path.is_file():
            missing.append(f"{file} (no such file)")
            continue
        if file not in cache:
            cache[file] = _test_names(path)
        if name not in cache[file]:
            missing.append(f"{file}::{name}")
    assert missing == [], "cited tests that do not exist:\n" + "\n".join(missing)


def test_every_test_of_a_cited_file_is_cited():
    """A test module the MUST list draws on must cite all of its tests (modules not yet
    in the document, e.g. sections of later issues, are left to their own rules)."""
    cited = set(_citations())
    uncited = []
    for rel in sorted({file for file, _ in cited}):
        path = REPO / rel
        if not path.is_file():
            continue
        uncited.extend(
            f"{rel}::{name}" for name in sorted(_test_names(path)) if (rel, name) not in cited
        )
    assert uncited == [], "tests missing from docs/conformance.md:\n" + "\n".join(uncited)

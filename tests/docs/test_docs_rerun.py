"""The outbox examples a reader copies run twice in the same directory (issue 31 item 9):
a second run once failed with ``IntegrityError`` after a misleading "storage transaction
failed" log line. Each python block with a ``tx.execute("INSERT`` that writes a file
database runs twice, in one fresh directory, and both runs must succeed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from docs_support import REPO, parse

OUTBOX_PAGES = ("README.md", "docs/embedded.md", "docs/sdk.md")


def outbox_blocks() -> list[tuple[str, str]]:
    found = []
    for page in OUTBOX_PAGES:
        blocks, _ = parse(REPO / page)
        for b in blocks:
            if b.kind == "python" and 'tx.execute("INSERT' in b.code and "file:" in b.code:
                found.append((b.where, b.code))
    return found


def test_the_outbox_pages_have_file_backed_examples() -> None:
    assert {where.split(":")[0] for where, _ in outbox_blocks()} == set(OUTBOX_PAGES)


@pytest.mark.parametrize(("where", "code"), outbox_blocks(), ids=lambda x: x.split("\n")[0])
def test_the_outbox_example_runs_twice(where: str, code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    for run in (1, 2):
        r = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0, f"{where}, run {run}:\n{r.stdout}\n{r.stderr}"
        assert "storage transaction failed" not in r.stderr, (where, r.stderr)

"""docs/benchmarks.md keeps no figure by hand (issue 29 §2): every table it prints lies in
a section a ``make bench`` writer rewrites -- the suite's (``bench:begin``/``end``,
``tests/bench/suite/run.py``) or a focused script's (``focused:NAME:begin``/``end``,
``tests/bench/suite/focused.py``) -- and each focused section has its script and each
script its section."""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "benchmarks.md"
sys.path.insert(0, str(REPO / "tests" / "bench" / "suite"))

import focused  # noqa: E402
import report  # noqa: E402


def _outside_generated(text: str) -> str:
    text = re.sub(r"<!-- bench:begin -->.*?<!-- bench:end -->", "", text, flags=re.S)
    return re.sub(
        r"<!-- focused:([\w-]+):begin -->.*?<!-- focused:\1:end -->", "", text, flags=re.S
    )


def test_every_table_in_benchmarks_md_is_in_a_generated_section() -> None:
    outside = _outside_generated(DOCS.read_text())
    hand_kept = [line for line in outside.splitlines() if line.lstrip().startswith("|")]
    assert hand_kept == [], "tables no make bench writer rewrites:\n" + "\n".join(hand_kept)


def test_each_focused_section_has_its_script_and_each_script_its_section() -> None:
    text = DOCS.read_text()
    sections = set(re.findall(r"<!-- focused:([\w-]+):begin -->", text))
    assert sections == set(focused.SCRIPTS)
    for name in sections:
        assert text.count(f"<!-- focused:{name}:end -->") == 1, name
    assert text.count(report.BEGIN) == 1 and text.count(report.END) == 1

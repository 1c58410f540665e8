"""The docs-examples machinery: every fenced block of README.md and docs/**/*.md, and how
each kind of block is run, so that a page cannot drift from the code.

A block's language says how it runs:

- ``bash``, ``sh``, ``shell``: sourced, in order, by ONE bash session per page (``set -e``,
  ``pipefail``): variables, functions and the working directory carry from block to
  block, as in a reader's terminal;
- ``python``, ``py``: ``python block.py``, run from that same session at its place;
- ``json``: must parse (one document, or one JSON object per line);
- ``expr``: every line must compile as a subscription filter (``test_filter``).

The session starts in an empty directory with no ``MQLITE_*`` variable set and the real
``mqlite`` command first on ``PATH``. When a runnable block of the page mentions
``BASE_URL`` or ``T``, a real broker runs for the page, started the way the README
starts one: ``MQLITE_DB=file:./broker.db mqlite serve`` in that directory, on a free
loopback port, with a generated token read from its JSON banner; ``BASE_URL`` and ``T``
hold its URL and that token (the README tells a reader to set the same two variables).

A block that cannot run carries a visible marker on the line right above its fence:

- ``<!-- not-run: REASON -->``: not run, and the reason is required (``docker run``, a
  command that serves until stopped, a synopsis with placeholders);
- ``<!-- run-until-output: TEXT -->`` (python only): a program that runs until stopped;
  it is run until TEXT appears in its output, then sent SIGTERM, and must exit 0.

Any other language without a ``not-run`` marker is an error, so a new page's blocks are
picked up, and checked, without touching the test.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
KINDS = {
    "bash": "shell",
    "sh": "shell",
    "shell": "shell",
    "python": "python",
    "py": "python",
    "json": "json",
    "expr": "expr",
}
MARKER = re.compile(r"<!--\s*([a-z-]+)\s*:(.*?)-->", re.S)
MARKERS = ("not-run", "run-until-output")


def pages() -> list[Path]:
    """README.md and every page under docs/, in a stable order."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def rel(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    marker: str = ""  # "", "not-run" or "run-until-output"
    argument: str = ""  # the marker's reason / awaited text

    @property
    def where(self) -> str:
        return f"{rel(self.page)}:{self.line}"

    @property
    def kind(self) -> str:
        return "skip" if self.marker == "not-run" else KINDS.get(self.lang, "")


def parse(page: Path) -> tuple[list[Block], list[str]]:
    """The page's code blocks, and the problems of its markers (a marker must sit on the
    line right above a fence, name a known marker and say something)."""
    tokens = MarkdownIt("commonmark").parse(page.read_text())
    found: list[Block] = []
    problems: list[str] = []
    pending: tuple[str, str, int] | None = None
    for tok in tokens:
        line = tok.map[0] + 1 if tok.map else 0
        if tok.type in ("fence", "code_block"):
            marker, argument = "", ""
            if pending is not None and pending[2] == line - 1:
                marker, argument = pending[0], pending[1]
                pending = None
            lang = tok.info.strip().split()[0].lower() if tok.info.strip() else ""
            found.append(Block(page, line, lang, tok.content, marker, argument))
        if pending is not None:
            problems.append(
                f"{rel(page)}:{pending[2]}: a {pending[0]} marker not right above a fence"
            )
            pending = None
        if tok.type == "html_block":
            for match in MARKER.finditer(tok.content):
                name, argument = match.group(1), " ".join(match.group(2).split())
                if name not in MARKERS:
                    continue
                end = tok.map[1] if tok.map else line
                pending = (name, argument, end)
                if not argument:
                    problems.append(f"{rel(page)}:{line}: <!-- {name}: --> needs a reason/text")
    if pending is not None:
        problems.append(f"{rel(page)}:{pending[2]}: a {pending[0]} marker not right above a fence")
    return found, problems


def check_blocks(page: Path) -> list[str]:
    """Why the page's blocks could not be checked as written (empty = all fine)."""
    found, problems = parse(page)
    for b in found:
        if not b.kind:
            shown = f"```{b.lang}" if b.lang else "a fence without a language"
            problems.append(
                f"{b.where}: {shown} is not a kind the docs test runs (bash, python, json, "
                "expr): run it as one of those, or mark it <!-- not-run: why -->"
            )
        if b.marker == "run-until-output" and b.kind != "python":
            problems.append(f"{b.where}: run-until-output is for python blocks")
    return problems


# -- json and expr blocks, checked in this process -------------------------------------


def check_json(block: Block) -> None:
    try:
        json.loads(block.code)
        return
    except json.JSONDecodeError:
        pass
    for n, line in enumerate(block.code.splitlines(), block.line + 1):
        if line.strip():
            try:
                json.loads(line)
            except json.JSONDecodeError as exc:
                raise AssertionError(f"{rel(block.page)}:{n}: not JSON: {exc}") from None


def check_expr(block: Block) -> None:
    import mqlite

    with mqlite.open_embedded(":memory:", background=False) as mq:
        for n, line in enumerate(block.code.splitlines(), block.line + 1):
            if line.strip() and not line.strip().startswith("//"):
                result = mq.test_filter(line.strip())
                assert result.valid, f"{rel(block.page)}:{n}: {line.strip()!r}: {result.error}"

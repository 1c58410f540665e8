"""docs/contributing.md's walk-through adds a real verb: this test follows it to the letter
in a copy of the repository (issue 27: "adding a verb touches 15 files", four of them route
lists nobody named). Each block marked ``<!-- add-a-verb: FILE OP [NAME] -->`` is applied
where the marker says; then the generators, ``make lint`` and the tests of step 9 run in
the copy. A step the page forgets, or a file that changed shape under it, fails here.

Ops: ``append`` (end of the file), ``before NAME`` (above the top-level statement that
assigns NAME), ``into NAME`` (before the closing bracket of the largest list, tuple or
dict literal of the statement or function NAME), ``into-class NAME`` (after the last line
of class NAME).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "contributing.md"
STEP = re.compile(
    r"<!-- add-a-verb: (?P<file>\S+) (?P<op>[a-z-]+)(?: (?P<name>\S+))? -->\n"
    r"(?:<!--.*?-->\n)?```python\n(?P<code>.*?)```",
    re.S,
)
DEADLINE_S = 600


@dataclass(frozen=True)
class Step:
    file: str
    op: str
    name: str
    code: str


def steps(text: str) -> list[Step]:
    return [Step(m["file"], m["op"], m["name"] or "", m["code"]) for m in STEP.finditer(text)]


def _target(tree: ast.Module, name: str) -> ast.stmt:
    for node in tree.body:
        names = []
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        if name in names:
            return node
    raise AssertionError(f"no top-level {name!r}")


def apply(source: str, step: Step) -> str:
    """``source`` with ``step.code`` placed where the step says."""
    lines = source.splitlines(keepends=True)
    if step.op == "append":
        return source.rstrip("\n") + "\n\n\n" + step.code
    node = _target(ast.parse(source), step.name)
    if step.op == "before":
        at = node.lineno - 1
        return "".join([*lines[:at], step.code, "\n\n", *lines[at:]])
    if step.op == "into-class":
        assert isinstance(node, ast.ClassDef) and node.end_lineno is not None
        at = node.end_lineno
        return "".join([*lines[:at], "\n", step.code, *lines[at:]])
    if step.op == "into":
        literals = [
            n for n in ast.walk(node) if isinstance(n, (ast.List, ast.Tuple, ast.Dict, ast.Set))
        ]
        largest = max(literals, key=lambda n: (n.end_lineno or 0) - n.lineno)
        assert largest.end_lineno is not None
        at = largest.end_lineno - 1  # the closing bracket's line
        return "".join([*lines[:at], step.code, *lines[at:]])
    raise AssertionError(f"unknown op {step.op!r}")


def test_the_placement_ops() -> None:
    src = (
        "A = [\n    1,\n]\n\n\nclass C:\n    x = 1\n\n\n"
        "def f():\n    return {\n        'a': 1,\n    }\n"
    )
    assert "    2,\n]" in apply(src, Step("", "into", "A", "    2,\n"))
    assert "    x = 1\n\n    y = 2\n" in apply(src, Step("", "into-class", "C", "    y = 2\n"))
    assert "'a': 1,\n        'b': 2,\n    }" in apply(
        src, Step("", "into", "f", "        'b': 2,\n")
    )
    assert apply(src, Step("", "before", "A", "B = 0\n")).startswith("B = 0\n\n\nA = [")
    assert apply(src, Step("", "append", "", "Z = 1\n")).endswith("}\n\n\nZ = 1\n")


def _bash_blocks_after(text: str, heading: str) -> list[str]:
    """The commands of the first bash block after ``heading`` (continuations joined)."""
    rest = text[text.index(heading) :]
    block = rest[rest.index("```bash\n") + 8 :]
    block = block[: block.index("```")]
    return [c for c in block.replace("\\\n", " ").splitlines() if c.strip()]


def _copy_repo(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if src.is_symlink() or not src.is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)  # mtimes kept: make sees the venv's stamps as fresh
    (dest / ".venv").symlink_to(ROOT / ".venv")
    # mypy's incremental cache (sizes and mtimes are kept, so only the modules the steps
    # edit and their dependents are checked again): minutes less on the 2-core CI machine.
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", dest / ".mypy_cache", symlinks=True)
    shared = ROOT.parent / "shared"
    if shared.exists():
        (dest.parent / "shared").symlink_to(shared.resolve())


def _run(command: str, repo: Path, env: dict[str, str]) -> None:
    if command.startswith("make "):  # never reinstall the shared venv from the copy
        command += " -o .venv/.runtime-installed -o .venv/.lint-installed"
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    output = f"{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"`{command}` failed in the copy:\n{output}"


@pytest.mark.skipif(not (ROOT / ".venv").exists(), reason="needs the repo's .venv (make venv)")
def test_the_walk_through_adds_a_working_verb(tmp_path: Path) -> None:
    text = PAGE.read_text()
    planned = steps(text)
    touched = {s.file for s in planned}
    assert len(planned) >= 10 and len(touched) >= 9, planned
    repo = tmp_path / "repo"
    _copy_repo(repo)
    for step in planned:
        path = repo / step.file
        path.write_text(apply(path.read_text(), step))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env["PYTHONPATH"] = str(repo / "app")  # ahead of the venv's editable path to ROOT
    probe = subprocess.run(
        [sys.executable, "-c", "import mqlite, sys; print(mqlite.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip().startswith(str(repo)), probe.stdout
    for command in _bash_blocks_after(text, "**6. The generated files**"):
        _run(command, repo, env)
    for command in _bash_blocks_after(text, "**9. The tests that prove it**"):
        _run(command, repo, env)


def test_the_walk_through_names_the_files_it_touches() -> None:
    """Every file a step edits is named in the page's prose too (a reader who does not
    run the test still finds them)."""
    text = PAGE.read_text()
    prose = STEP.sub("", text)
    for step in steps(text):
        assert f"`{step.file}`" in prose, step.file

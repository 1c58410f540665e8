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
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
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
NEEDS_BROKER = re.compile(r"\bBASE_URL\b|\$T\b|\$\{T\}|\[\"T\"\]")
PAGE_TIMEOUT_S = 300
BROKER_DEADLINE_S = 30.0
UNTIL_DEADLINE_S = 60


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


# -- shell and python blocks, run by one bash session per page -------------------------

PREAMBLE = f"""\
set -eE -o pipefail
run_until() {{  # PYTHON FILE TEXT: run until TEXT is in its output, then SIGTERM; exit 0
  local out pid rc=0 deadline=$((SECONDS + {UNTIL_DEADLINE_S}))
  out=$(mktemp)
  "$1" "$2" > "$out" 2>&1 &
  pid=$!
  until grep -qF -- "$3" "$out"; do
    if ! kill -0 "$pid" 2>/dev/null || (( SECONDS >= deadline )); then
      cat "$out"; echo "docs test: the program never printed: $3" >&2
      kill -KILL "$pid" 2>/dev/null || true
      return 1
    fi
    sleep 0.1
  done
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  cat "$out"
  return "$rc"
}}
"""


def session_script(blocks: list[Block], files: Path, progress: Path) -> str:
    """The page as one bash script; before each block it records the block's number."""
    lines = [PREAMBLE]
    python = shlex.quote(sys.executable)
    for i, b in enumerate(blocks):
        lines.append(f"echo {i} > {shlex.quote(str(progress))}")
        if b.kind == "shell":
            path = files / f"block{i:02d}.sh"
            path.write_text(b.code)
            lines.append(f"source {shlex.quote(str(path))}")
        else:
            path = files / f"block{i:02d}.py"
            path.write_text(b.code)
            if b.marker == "run-until-output":
                lines.append(
                    f"run_until {python} {shlex.quote(str(path))} {shlex.quote(b.argument)}"
                )
            else:
                lines.append(f"{python} {shlex.quote(str(path))}")
    lines.append(f"echo done > {shlex.quote(str(progress))}")
    return "\n".join(lines) + "\n"


def session_env(extra: dict[str, str]) -> dict[str, str]:
    """A reader's terminal: no MQLITE_* variable, the real ``mqlite`` first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@dataclass
class Outcome:
    ok: bool
    failed_at: Block | None
    output: str


def run_session(page: Path, blocks: list[Block], root: Path) -> Outcome:
    """Run the page's shell and python blocks in order; stop at the first that fails."""
    runnable = [b for b in blocks if b.kind in ("shell", "python")]
    if not runnable:
        return Outcome(True, None, "")
    work, files = root / "work", root / "blocks"
    work.mkdir(parents=True)
    files.mkdir(parents=True)
    assert (Path(sys.executable).parent / "mqlite").exists(), "the mqlite command is not installed"
    progress = files / "progress"
    script = files / "session.sh"
    script.write_text(session_script(runnable, files, progress))
    needs_broker = any(NEEDS_BROKER.search(b.code) for b in runnable)
    with broker(work) if needs_broker else _nothing() as extra:
        log = files / "session.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                ["bash", "--noprofile", "--norc", str(script)],
                cwd=work,
                env=session_env(extra),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                rc = proc.wait(timeout=PAGE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                rc = -1
            finally:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # whatever a block left running
                proc.wait()
    state = progress.read_text().strip() if progress.exists() else "0"
    output = log.read_text(errors="replace")
    if rc == 0 and state == "done":
        return Outcome(True, None, output)
    index = int(state) if state.isdigit() else 0
    return Outcome(False, runnable[index], output)


@contextmanager
def _nothing() -> Iterator[dict[str, str]]:
    yield {}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def broker(work: Path) -> Iterator[dict[str, str]]:
    """``MQLITE_DB=file:./broker.db mqlite serve`` in ``work``; yields BASE_URL and T."""
    port = _free_port()
    out, err = work.parent / "broker.out", work.parent / "broker.err"
    with out.open("wb") as fo, err.open("wb") as fe:
        proc = subprocess.Popen(
            ["mqlite", "serve", "--addr", f"127.0.0.1:{port}"],
            cwd=work,
            env=session_env({"MQLITE_DB": "file:./broker.db"}),
            stdin=subprocess.DEVNULL,
            stdout=fo,
            stderr=fe,
            start_new_session=True,
        )
    try:
        base_url = f"http://127.0.0.1:{port}"
        token = _wait_ready(proc, base_url, out, err)
        yield {"BASE_URL": base_url, "T": token}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _wait_ready(proc: subprocess.Popen[bytes], base_url: str, out: Path, err: Path) -> str:
    """The generated token from the JSON banner, once /healthz answers (polled)."""
    deadline = time.monotonic() + BROKER_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the docs broker exited:\n{err.read_text()}")
        complete = out.read_text().rpartition("\n")[0]  # a line being written is not read
        tokens = [
            record["token"]
            for line in complete.splitlines()
            if "token" in (record := json.loads(line))
        ]
        if tokens:
            with suppress(OSError), urllib.request.urlopen(base_url + "/healthz", timeout=1):
                return str(tokens[0])
        time.sleep(0.05)
    raise AssertionError(f"the docs broker did not start:\n{err.read_text()[-3000:]}")

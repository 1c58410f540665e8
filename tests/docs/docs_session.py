"""The bash session that runs a page's shell and python blocks, in order, in a fresh
directory, beside a real broker when the page needs one (see ``docs_support`` for the
rules; this is how they are carried out).

The directory looks like the root of a checkout to the blocks, as the docs assume
("run from the repository root"): the repository's files are there as read-only-by-
convention symlinks (``ops/``, ``deploy/``, ``scripts/``, ``.venv`` ...), while whatever a
block creates (``./mq.db``, ``data/``) lands in the fresh directory, never in the repo."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from docs_support import Block

from waiting import poll_real_process

REPO = Path(__file__).resolve().parents[2]
# What a reader's checkout has at its root and the docs refer to.
REPO_ENTRIES = (
    ".venv", "app", "deploy", "docs", "ops", "scripts", "tests", "Dockerfile", "Makefile",
    "compose.yaml", "fly.toml", "pyproject.toml", "README.md",
)  # fmt: skip
NEEDS_BROKER = re.compile(r"\bBASE_URL\b|\$T\b|\$\{T\}|\[\"T\"\]")
PAGE_TIMEOUT_S = 300
BROKER_DEADLINE_S = 30.0
UNTIL_DEADLINE_S = 60

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
    for entry in REPO_ENTRIES:
        if (REPO / entry).exists():
            (work / entry).symlink_to(REPO / entry)
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
    found: list[str] = []

    def ready() -> bool:
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
                found.append(str(tokens[0]))
                return True
        return False

    try:
        poll_real_process("the docs broker", ready, deadline_s=BROKER_DEADLINE_S)
    except AssertionError as exc:
        if "timed out" not in str(exc):
            raise
        raise AssertionError(f"the docs broker did not start:\n{err.read_text()[-3000:]}") from None
    return found[0]

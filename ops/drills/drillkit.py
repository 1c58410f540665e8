"""What every drill shares: arguments, progress lines, the PASS/FAIL report, a broker.

A drill is an operator tool (docs/operations.md "Drills"): it prints one progress line
per step on stderr while it runs, then a report of every check it made (PASS/FAIL with
the evidence) and the figures it measured; ``--json`` puts the same report on stdout as
one JSON object. The exit status is 0 on PASS, 1 on FAIL, 2 when it could not run.
Every report also goes to a file (``--report-dir``, default build/drills/ of the checkout)
with what an operator attaches to a change request: when it ran, the broker version, the
host and the parameters; the drill prints the file's path on stderr.

The broker a drill starts is a real ``mqlite serve`` (its own session, so a SIGKILL of
its process group is the death of the whole service, as when a container's main process
dies) on a loopback port, with a generated administrator token passed in the
environment (never argv).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

STARTUP_DEADLINE_S = 30.0
REPORT_DIR = Path(__file__).resolve().parents[2] / "build" / "drills"


class DrillError(Exception):
    """The drill could not run (not a FAIL of what it checks): exit status 2."""


def arguments(name: str, doc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"ops/drills/{name}", description=doc)
    p.add_argument("--json", action="store_true", help="the report as one JSON object")
    p.add_argument("--quick", action="store_true", help="the short variant run by make test")
    p.add_argument("--seed", type=int, default=None, help="random seed (printed in the report)")
    p.add_argument("--workdir", default="", help="scratch directory (default: a new temp dir)")
    p.add_argument("--image", default="", help="run the broker as this container image (podman)")
    p.add_argument("--report-dir", default=str(REPORT_DIR), help="where the report file goes")
    return p


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Report:
    """Checks and figures of one drill run; ``finish`` prints it and returns the status."""

    drill: str
    as_json: bool = False
    checks: list[Check] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    parameters: dict[str, Any] = field(default_factory=dict)
    started_at: str = field(default_factory=lambda: utc_now().isoformat(timespec="seconds"))

    def progress(self, line: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"[{self.drill} {elapsed:6.1f}s] {line}", file=sys.stderr, flush=True)

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(Check(name, bool(ok), detail))
        self.progress(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")
        return bool(ok)

    def figure(self, name: str, value: Any) -> None:
        self.figures[name] = value

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "drill": self.drill,
            "result": "PASS" if self.passed else "FAIL",
            "started_at": self.started_at,
            "elapsed_s": round(time.monotonic() - self.started, 2),
            "broker_version": broker_version(self.parameters.get("image", "")),
            "host": {
                "name": socket.gethostname(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
            },
            "parameters": self.parameters,
            "checks": [c.__dict__ for c in self.checks],
            "figures": self.figures,
        }

    def write(self, report: dict[str, Any], directory: str) -> Path:
        """The report as a file named after the drill and its start (UTC), unique per run."""
        stamp = self.started_at.replace("+00:00", "Z").replace(":", "")
        path = Path(directory) / f"{self.drill}-{stamp}-{os.getpid()}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        return path

    def finish(self) -> int:
        report = self.as_dict()
        directory = self.parameters.get("report_dir")
        if directory:
            path = self.write(report, directory)
            print(f"{self.drill} drill report: {path}", file=sys.stderr, flush=True)
        if self.as_json:
            print(json.dumps(report, sort_keys=True))
        else:
            print(f"{self.drill} drill: {report['result']} in {report['elapsed_s']} s")
            print(f"  started {report['started_at']} on {report['host']['name']},"
                  f" broker {report['broker_version']}")  # fmt: skip
            for c in self.checks:
                print(f"  [{'PASS' if c.ok else 'FAIL'}] {c.name}: {c.detail}")
            if self.figures:
                print("figures:")
                width = max(len(k) for k in self.figures)
                for k, v in self.figures.items():
                    print(f"  {k.ljust(width)}  {v}")
        return 0 if self.passed else 1


def run_drill(name: str, body: Any, args: argparse.Namespace) -> int:
    """Run ``body(report, args)``; a DrillError is exit 2 with its message."""
    report = Report(name, as_json=args.json, parameters=dict(vars(args)))
    try:
        body(report, args)
    except DrillError as exc:
        print(f"{name} drill could not run: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # what it checks broke it (e.g. a queue the restore lost): FAIL
        report.check("the drill ran to its end", False, f"{type(exc).__name__}: {exc}")
    finally:
        for path in _scratch:  # the temp dirs this run made (never a --workdir)
            shutil.rmtree(path, ignore_errors=True)
    return report.finish()


def utc_now() -> datetime:
    from mqlite.clock import SystemClock  # after reexec_in_venv: mqlite is importable

    return datetime.fromtimestamp(SystemClock().now_ms() / 1000, UTC)


def broker_version(image: str) -> str:
    """The version of the broker the drill ran: this checkout's package, or the image's
    org.opencontainers.image.version label (set by `make image`) with --image."""
    if not image:
        from mqlite.version import VERSION

        return VERSION
    import drill_container  # podman only when a drill runs an image

    label = '{{index .Config.Labels "org.opencontainers.image.version"}}'
    found = drill_container.engine("image", "inspect", "--format", label, image, check=False)
    return f"{image} {found.strip() or 'unknown'}"


def healthy(url: str) -> bool:
    """``/healthz`` of the broker at ``url`` answers 200 now (a refused or slow answer is
    False: the callers poll it until their own deadline)."""
    try:
        return httpx.get(url + "/healthz", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The caller's environment without any MQLITE_* (the drill decides), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@dataclass
class Broker:
    """A ``mqlite serve`` the drill started on ``db``; restartable on the same file."""

    db: Path
    logdir: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    token: str = field(default_factory=lambda: "mqk_drill_" + secrets.token_hex(16))
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, extra: Mapping[str, str] | None = None) -> float:
        """Start and wait for /healthz; returns the seconds it took (the recovery time)."""
        env = clean_env(
            {
                "MQLITE_DB": f"file:{self.db}",
                "MQLITE_ADDR": f"127.0.0.1:{self.port}",
                "MQLITE_TOKENS": self.token,
                **self.extra_env,
                **(extra or {}),
            }
        )
        self.starts += 1
        log = open(self.logdir / f"broker-{self.starts}.log", "wb")  # noqa: SIM115
        began = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mqlite.cli.main", "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = began + STARTUP_DEADLINE_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DrillError(f"the broker exited {self.proc.returncode}: {self.log_tail()}")
            if healthy(self.url):
                return time.monotonic() - began
            time.sleep(0.05)
        self.kill()
        raise DrillError(f"the broker did not answer /healthz in {STARTUP_DEADLINE_S} s")

    @property
    def main_pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def describe(self) -> str:
        return f"mqlite serve process {self.main_pid} (this checkout)"

    def path_inside(self, host: Path) -> str:
        """The path the broker sees for ``host`` (the same: no container)."""
        return str(host)

    def log_tail(self) -> str:
        path = self.logdir / f"broker-{self.starts}.log"
        return path.read_text(errors="replace")[-600:] if path.exists() else ""

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """``sig`` to the whole service (its process group), then reap it."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        wait_group_gone(self.proc.pid)
        self.proc = None

    def stop(self) -> None:
        self.kill(signal.SIGTERM)


def wait_group_gone(pgid: int, deadline_s: float = 15.0) -> None:
    """A gunicorn worker may outlive its master by a moment: wait until the whole group
    is gone (it holds the database lock until then)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


_scratch: list[Path] = []


def workdir(args: argparse.Namespace, name: str) -> Path:
    """``--workdir`` (kept), else a new temp directory removed when the drill ends."""
    if args.workdir:
        path = Path(args.workdir)
        path.mkdir(parents=True, exist_ok=True)
        return path
    path = Path(tempfile.mkdtemp(prefix=f"mqlite-drill-{name}-"))
    _scratch.append(path)
    return path


def reexec_in_venv(script: str) -> None:
    """Run under the repo's .venv when ``mqlite`` is not importable (``ops/drills/x``)."""
    try:
        import mqlite  # noqa: F401
    except ImportError:
        venv = Path(script).resolve().parents[2] / ".venv" / "bin" / "python"
        if venv.exists() and Path(sys.executable) != venv:
            os.execv(str(venv), [str(venv), script, *sys.argv[1:]])
        raise

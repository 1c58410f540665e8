"""podman helpers for the container tier: real images, real containers, real signals.

Every test names its containers and volumes with a per-run prefix and removes them at
teardown. CONTAINERS_CONF points podman at ops/ci/containers.conf (runc, rlimits below
this machine's hard limit); the variable is set for this process and its children only.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

REPO = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = REPO / "ops" / "ci" / "containers.conf"
IMAGE = "localhost/mqlite:appliance-test"
SBOM = REPO / "build" / "appliance-sbom.cdx.json"  # written by `make image` (build/: gitignored)
COMPOSE = [sys.executable, "-m", "podman_compose"]
PREFIX = f"mqt-{uuid.uuid4().hex[:6]}"
T = TypeVar("T")


def podman_env() -> dict[str, str]:
    env = dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))
    return {k: v for k, v in env.items() if not k.startswith("MQLITE_")}


def compose_project(
    project: Path, compose_file: str, name: str, env: dict[str, str]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``compose(*args)``: podman-compose on ``project/compose_file`` as project ``name``
    with ``env`` (its output captured; a stuck command fails after 300 s)."""
    base = [*COMPOSE, "-p", name, "-f", str(project / compose_file)]

    def compose(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*base, *args], cwd=project, env=env, capture_output=True, text=True, timeout=300
        )

    return compose


def podman(*args: str, check: bool = True, timeout: float = 300) -> str:
    r = subprocess.run(
        ["podman", *args], env=podman_env(), capture_output=True, text=True, timeout=timeout
    )
    if check and r.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} -> {r.returncode}\n{r.stderr[-3000:]}")
    return r.stdout


def inspect(name: str) -> dict[str, Any]:
    data: list[dict[str, Any]] = json.loads(podman("inspect", name))
    return data[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def name(kind: str) -> str:
    return f"{PREFIX}-{kind}-{uuid.uuid4().hex[:4]}"


def wait_for(
    what: str,
    probe: Callable[[], T | None],
    timeout: float = 60,
    explain: Callable[[], str] | None = None,
) -> T:
    """Poll ``probe`` until it returns something truthy (this tier may sleep: real
    processes start and stop on their own time). On timeout the message carries the LAST
    outcome, whether an exception or a falsy answer (an early KeyError must not stand for
    a later "target down: no such host"), and ``explain()``, e.g. a container's restarts
    and last log lines: the failure says why, not only that time ran out."""
    deadline = time.monotonic() + timeout
    last = "no attempt"
    while time.monotonic() < deadline:
        try:
            value = probe()
            if value:
                return value
            last = f"returned {value!r}"
        except (httpx.HTTPError, AssertionError, KeyError, OSError) as exc:
            last = repr(exc)
        time.sleep(0.2)
    extra = ""
    if explain is not None:
        try:
            extra = f"; {explain()}"
        except Exception as exc:  # the explanation must not hide the timeout itself
            extra = f"; (no explanation: {exc!r})"
    raise AssertionError(f"timed out waiting for {what} (last: {last}{extra})")


def container_story(container: str, lines: int = 5) -> str:
    """One line on a container that should be serving: its state, how often it restarted
    and the last lines it logged (a crash loop shows its cause here)."""
    state = podman(
        "inspect", "--format", "{{.State.Status}} restarts={{.RestartCount}}", container,
        check=False,
    ).strip()  # fmt: skip
    r = subprocess.run(
        ["podman", "logs", "--tail", str(lines), container],
        env=podman_env(), capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    log = " | ".join((r.stdout + r.stderr).strip().splitlines()[-lines:])
    return f"{container}: {state or 'missing'}; last log: {log}"


def healthy(url: str) -> bool:
    return httpx.get(f"{url}/healthz", timeout=2).text == "ok"


def printed_token(container: str) -> str:
    """The administrator token the broker printed at its LAST start (container logs)."""
    tokens = re.findall(r'"token": "(mqk_[0-9a-f]{64})"', podman("logs", container))
    assert tokens, podman("logs", container)
    return tokens[-1]


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def process_tree(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [pid] + [p for c in children for p in process_tree(int(c))]


class Rpc:
    """A tiny client for the broker's HTTP API (the SDK has its own tests)."""

    def __init__(self, url: str, token: str) -> None:
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )

    def call(self, method: str, body: dict[str, Any]) -> Any:
        r = self.http.post(f"/mqlite.v1.{method}", json=body)
        assert r.status_code == 200, (method, r.status_code, r.text)
        return r.json()

    def create_queue(self, queue: str) -> None:
        self.call("AdminService/CreateQueue", {"name": queue})

    def send(self, queue: str, body: str) -> None:
        data = base64.b64encode(body.encode()).decode()
        self.call("QueueService/Send", {"queue": queue, "messages": [{"body": data}]})

    def receive_all(self, queue: str) -> list[str]:
        """Peek-lock and complete until the queue is empty; the bodies, in order."""
        bodies: list[str] = []
        while True:
            got = self.call("QueueService/Receive", {"queue": queue, "max_messages": 256})
            if not got["messages"]:
                return bodies
            for m in got["messages"]:
                bodies.append(base64.b64decode(m["body"]).decode())
            self.call(
                "QueueService/CompleteBatch",
                {
                    "queue": queue,
                    "messages": [
                        {"seq_number": m["seq_number"], "lock_token": m["lock_token"]}
                        for m in got["messages"]
                    ],
                },
            )

    def close(self) -> None:
        self.http.close()

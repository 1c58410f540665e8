"""deploy/Caddyfile: `caddy validate`, then a real Caddy in front of a real broker proving
that /metrics never answers from the public side (whatever the spelling or the token)
while the API and /healthz pass through."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from packaging_support import REPO, run

CADDYFILE = REPO / "deploy" / "Caddyfile"
ADMIN = "mqk_caddy_admin_" + "a" * 24
MONITOR = "mqk_caddy_monitor_" + "b" * 24


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _caddy_env(tmp_path: Path, site: str, upstream: str = "127.0.0.1:6754") -> dict[str, str]:
    env = dict(os.environ, MQLITE_SITE=site, MQLITE_UPSTREAM=upstream, HOME=str(tmp_path))
    env["CADDY_ADMIN"] = f"127.0.0.1:{_port()}"  # not the shared default localhost:2019
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    return env


def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{proc.args} exited {proc.returncode}"
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} not up")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def test_caddyfile_validates(tmp_path: Path) -> None:
    r = run(
        "caddy",
        "validate",
        "--config",
        CADDYFILE,
        "--adapter",
        "caddyfile",
        env=_caddy_env(tmp_path, "mq.example.com"),
    )
    assert r.returncode == 0 and "Valid configuration" in r.stdout + r.stderr, r.stderr


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(proxy URL, broker URL): a broker with metrics on, Caddy in front on plain HTTP
    (the site address and the upstream port are the knobs changed: TLS needs a public
    name, and the test broker listens on a free port)."""
    bport, cport = _port(), _port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env.update(
        MQLITE_DB=f"file:{tmp_path / 'mq.db'}",
        MQLITE_TOKENS=ADMIN,
        MQLITE_MONITOR_TOKENS=MONITOR,
        MQLITE_METRICS="on",
    )
    broker = subprocess.Popen(
        [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"127.0.0.1:{bport}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    caddy = subprocess.Popen(
        ["caddy", "run", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        env=_caddy_env(tmp_path, f"http://127.0.0.1:{cport}", f"127.0.0.1:{bport}"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait(f"http://127.0.0.1:{bport}/healthz", broker)
        _wait(f"http://127.0.0.1:{cport}/healthz", caddy)
        yield f"http://127.0.0.1:{cport}", f"http://127.0.0.1:{bport}"
    finally:
        _stop(caddy)
        _stop(broker)


def test_metrics_are_blocked_publicly_and_the_api_passes(proxied: tuple[str, str]) -> None:
    proxy, broker = proxied
    monitor = {"Authorization": f"Bearer {MONITOR}"}
    assert httpx.get(f"{broker}/metrics", headers=monitor).status_code == 200  # control
    for path in ("/metrics", "/metrics/", "/METRICS", "/%6detrics", "/metrics?x=1", "/Metrics"):
        r = httpx.get(f"{proxy}{path}", headers=monitor)
        assert r.status_code == 404 and "mqlite_" not in r.text, path
    assert httpx.get(f"{proxy}/healthz").text == "ok"
    r = httpx.post(
        f"{proxy}/mqlite.v1.AdminService/CreateQueue",
        json={"name": "via-caddy"},
        headers={"Authorization": f"Bearer {ADMIN}"},
    )
    assert r.status_code == 200, r.text

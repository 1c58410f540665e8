"""``make run``'s first start (issue 31 item 8): the generated development token is kept
in ./data/ (0600) and reused, so a ``$T`` exported yesterday still works after a restart,
and the console URL is printed with it. Runs ``scripts/dev_run.py`` exactly as the
Makefile does, in a scratch directory standing for the clone, with a real broker."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
from e2e_support import base_env, free_port, wait_healthy

import mqlite

REPO = Path(__file__).resolve().parents[2]
DEV_RUN = str(REPO / "scripts" / "dev_run.py")
MQLITE = [sys.executable, "-m", "mqlite.cli.main", "serve"]


def start(clone: Path, port: int) -> tuple[subprocess.Popen[bytes], Path]:
    env = base_env(clone / "data" / "mq.db", {"MQLITE_ADDR": f"127.0.0.1:{port}"})
    env["PYTHONPATH"] = str(Path(mqlite.__file__).resolve().parents[1])
    out = clone / f"stdout-{port}.txt"
    with out.open("wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, DEV_RUN, "data/dev-token", *MQLITE],
            cwd=clone,
            env=env,
            stdout=fh,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    wait_healthy(proc, f"http://127.0.0.1:{port}", 30)
    return proc, out


def stop(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def lines(out: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_make_run_keeps_its_token_across_restarts_and_prints_the_console(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    port = free_port()
    proc, out = start(tmp_path, port)
    try:
        (first, *rest) = lines(out)
        token = first["token"]
        assert token.startswith("mqk_") and first["ui"] == f"http://127.0.0.1:{port}/ui/"
        assert "data/dev-token" in first["msg"] and "export BASE_URL=" in first["msg"]
        assert any(r.get("ui") == f"http://127.0.0.1:{port}/ui/" for r in rest)  # the broker's
        assert not any("token" in r for r in rest)  # printed once, by the launcher
    finally:
        stop(proc)
    kept = tmp_path / "data" / "dev-token"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert kept.read_text().strip() == token
    port = free_port()
    proc, out = start(tmp_path, port)  # the next make run
    try:
        assert lines(out)[0]["token"] == token
        r = httpx.post(
            f"http://127.0.0.1:{port}/mqlite.v1.AdminService/ListQueues",
            json={},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert r.status_code == 200, r.text  # yesterday's $T still works
    finally:
        stop(proc)


def test_a_configured_token_is_left_alone(tmp_path: Path) -> None:
    env = {**os.environ, "MQLITE_TOKENS": "mqk_mine"}
    env.pop("MQLITE_TOKENS_FILE", None)
    r = subprocess.run(
        [sys.executable, DEV_RUN, "data/dev-token", sys.executable, "-c",
         "import os; print(os.environ.get('MQLITE_TOKENS_FILE', '-'))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert (r.returncode, r.stdout) == (0, "-\n")
    assert not (tmp_path / "data").exists()

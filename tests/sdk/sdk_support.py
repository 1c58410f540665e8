"""Helpers of the SDK suite: a real ``mqlite serve`` subprocess on a free loopback port."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from waiting import poll_real_process

ADMIN_TOKEN = "mqk_" + "a" * 64


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Broker:
    url: str
    token: str
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def start_broker(directory: Path, token: str = ADMIN_TOKEN) -> Broker:
    port = free_port()
    env = dict(os.environ)
    env.update(MQLITE_DB=f"file:{directory / 'mq.db'}", MQLITE_TOKENS=token)
    env.pop("MQLITE_ADDR", None)
    log = directory / "broker.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"127.0.0.1:{port}"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    url = f"http://127.0.0.1:{port}"
    broker = Broker(url, token, proc, log)

    def healthy() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url + "/healthz", timeout=1) as r:
            return bool(r.status == 200)
        return False

    try:
        poll_real_process("the broker's /healthz", healthy, deadline_s=30)
    except AssertionError:
        broker.stop()
        raise RuntimeError(f"broker did not start: {log.read_text()[-2000:]}") from None
    return broker

"""Real processes for the replication tier: an S3 server (moto in server mode, on
loopback) behind a TCP relay that can cut it off, and ``mqlite serve`` under Litestream.

The relay is how the "S3 goes away" fault is made: while cut, it refuses connections and
drops the open ones, exactly what an unreachable endpoint looks like to Litestream;
moto's buckets survive, so replication can resume. This tier may sleep and poll (real
processes), always against a deadline.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import boto3
import httpx
from moto.server import ThreadedMotoServer

TOKEN = "mqk_replication_" + "r" * 32
KEY_ID, SECRET = "AKIDREPLICATIONTEST", "s3cr3t/with$dollar+and=signs"
T = TypeVar("T")
STARTED: list[subprocess.Popen[bytes]] = []  # killed (process group) after each test


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 30) -> T:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = probe()
            if value:
                return value
        except (httpx.HTTPError, OSError, KeyError, ValueError) as exc:
            last = exc
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last error: {last!r})")


class Relay:
    """A TCP relay 127.0.0.1:port -> upstream that can be cut and restored."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.port = free_port()
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        lst = socket.socket()
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("127.0.0.1", self.port))
        lst.listen(64)
        self._listener = lst
        threading.Thread(target=self._accept, args=(lst,), daemon=True).start()

    def cut(self) -> None:
        """Refuse new connections and reset the open ones."""
        assert self._listener is not None
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._listener = None
        with self._lock:
            for c in self._conns:
                with contextlib.suppress(OSError):
                    c.shutdown(socket.SHUT_RDWR)
                c.close()
            self._conns.clear()

    def _accept(self, lst: socket.socket) -> None:
        while True:
            try:
                client, _ = lst.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns.update((client, up))
            for a, b in ((client, up), (up, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)


@dataclass
class S3:
    server: ThreadedMotoServer
    relay: Relay
    bucket: str

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.relay.port}"

    def objects(self, prefix: str) -> list[str]:
        s3 = boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{self.relay.upstream}",
            aws_access_key_id=KEY_ID,
            aws_secret_access_key=SECRET,
            region_name="us-east-1",
        )
        out = s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return [o["Key"] for o in out.get("Contents", [])]


@contextlib.contextmanager
def s3_server() -> Iterator[S3]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{port}",
            aws_access_key_id=KEY_ID,
            aws_secret_access_key=SECRET,
            region_name="us-east-1",
        ).create_bucket(Bucket="mqlite-replica")
        relay = Relay(port)
        yield S3(server, relay, "mqlite-replica")
        relay.cut()
    finally:
        server.stop()


@dataclass
class Broker:
    proc: subprocess.Popen[bytes]
    url: str
    data: Path
    log: Path
    http: httpx.Client

    def rpc(self, method: str, body: dict[str, Any]) -> Any:
        r = self.http.post(f"/mqlite.v1.{method}", json=body)
        assert r.status_code == 200, (method, r.status_code, r.text)
        return r.json()

    def send(self, queue: str, bodies: list[str]) -> None:
        msgs = [{"body": base64.b64encode(b.encode()).decode()} for b in bodies]
        self.rpc("QueueService/Send", {"queue": queue, "messages": msgs})

    def drain(self, queue: str) -> list[str]:
        """Receive-and-delete until empty: every body, in order."""
        got: list[str] = []
        while True:
            out = self.rpc(
                "QueueService/Receive",
                {"queue": queue, "max_messages": 256, "receive_mode": 1},
            )
            if not out["messages"]:
                return got
            got += [base64.b64decode(m["body"]).decode() for m in out["messages"]]

    def observe(self) -> dict[str, Any]:
        out: dict[str, Any] = self.rpc("AdminService/Observe", {})
        return out

    def metrics(self) -> str:
        return self.http.get("/metrics").text

    def socket_path(self) -> str:
        """Litestream's control socket: the launcher exec'd Litestream (same pid) with it
        in the environment it passes on to the broker."""
        for item in Path(f"/proc/{self.proc.pid}/environ").read_bytes().split(b"\0"):
            if item.startswith(b"MQLITE_REPLICA_SOCKET="):
                return item.split(b"=", 1)[1].decode()
        raise KeyError("no MQLITE_REPLICA_SOCKET in Litestream's environment")

    def kill(self) -> None:
        """SIGKILL Litestream and the broker at once (a crashed machine: no final sync)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.http.close()

    def stop(self) -> int:
        """SIGTERM to Litestream (PID 1's role): it forwards to the broker, then syncs."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(20)
        finally:
            self.http.close()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)


def replica_env(s3: S3, data: Path, secrets: Path, path: str) -> dict[str, str]:
    """The broker's environment: replication on, credentials in files only. TMPDIR (the
    launcher's runtime directory) is short: a unix socket path has at most 108 bytes."""
    secrets.mkdir(exist_ok=True)
    runtime = tempfile.mkdtemp(prefix="mqrep-", dir="/tmp")
    (secrets / "key-id").write_text(KEY_ID + "\n")
    (secrets / "secret").write_text(SECRET + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MQLITE_", "AWS_"))}
    # AWS_CA_BUNDLE (set on this CI machine) makes litestream refuse to start
    # ("unable to add custom RootCAs HTTPClient"): shared OPS-TOOLING §10.
    env.update(
        MQLITE_DB=f"file:{data / 'mq.db'}",
        MQLITE_TOKENS=TOKEN,
        MQLITE_METRICS="on",
        MQLITE_REPLICA_URL=f"s3://{s3.bucket}/{path}",
        MQLITE_REPLICA_ENDPOINT=s3.endpoint,
        MQLITE_REPLICA_REGION="us-east-1",
        MQLITE_REPLICA_ACCESS_KEY_ID_FILE=str(secrets / "key-id"),
        MQLITE_REPLICA_SECRET_ACCESS_KEY_FILE=str(secrets / "secret"),
        PYTHONUNBUFFERED="1",
        TMPDIR=runtime,
    )
    return env


def start_broker(env: dict[str, str], data: Path, log: Path) -> Broker:
    port = free_port()
    data.mkdir(exist_ok=True)
    with log.open("ab") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"127.0.0.1:{port}"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    STARTED.append(proc)
    url = f"http://127.0.0.1:{port}"
    http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    broker = Broker(proc, url, data, log, http)

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"broker exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        return httpx.get(f"{url}/healthz", timeout=2).text == "ok"

    wait_for("the broker under litestream", up, timeout=60)
    return broker


def litestream_list(socket_path: str) -> dict[str, Any]:
    """GET /list on Litestream's control socket (what ``litestream list`` prints)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(socket_path)
        s.sendall(b"GET /list HTTP/1.0\r\nHost: litestream\r\n\r\n")
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    body = raw.split(b"\r\n\r\n", 1)[1]
    out: dict[str, Any] = json.loads(body)
    return out


def kill_started() -> None:
    """SIGKILL every process group a test started and left running (a failed test)."""
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

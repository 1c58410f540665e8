"""End-to-end support: a REAL ``mqlite serve`` process on a free loopback port.

``broker_factory(env=..., args=...)`` starts ``python -m mqlite.cli.main serve`` with a
temp database, waits (bounded) for ``/healthz`` and returns a ``Broker``: base URL,
admin token, a keep-alive httpx client and the captured stdout/stderr files. Teardown
sends SIGTERM and waits; a broker still alive after 15 s has its process group killed.
This is the only test tier allowed to sleep and poll (always against a deadline).

``MQLITE_E2E_STORE=libsql`` puts each broker's database on a real libSQL server instead
of a file (issue 16: "the e2e tier runs once with a broker on sqld"): every database path
the factory hands out gets its own fresh ``sqld`` (tests/sqld_harness.py), so a broker
started again on an earlier broker's ``db_path`` finds that broker's data. A test whose
subject is the local file itself (its WAL, its lock, its disk) carries
``file_store_only(reason)`` and is skipped there with that reason.
"""

from __future__ import annotations

import base64
import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from mqlite.clock import SystemClock

STARTUP_DEADLINE_S = 15.0
STOP_DEADLINE_S = 15.0
ADMIN_TOKEN = "mqk_e2e_admin_" + "a" * 24
RPC = "/mqlite.v1."

_CLOCK = SystemClock()


def now_ms() -> int:
    """The wall clock (the broker runs on the same host, so on the same clock)."""
    return _CLOCK.now_ms()


def slowdown(sample_cpu_s: float = 0.1) -> float:
    """How much slower than its CPU time wall time runs here, now (>= 1): the wall time of
    a ``sample_cpu_s`` CPU-bound loop over its CPU time. About 1 on an idle machine, 5-10
    with the 2 cores shared by a dozen busy processes (issue 25)."""
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    n = 0
    while time.thread_time() - cpu0 < sample_cpu_s:
        n += 1
    return max(1.0, (time.perf_counter() - wall0) / (time.thread_time() - cpu0))


def scaled(seconds: float) -> float:
    """A latency bound of an idle machine, stretched by the current ``slowdown``: a test
    that says "promptly" (a parked poll woken, a probe answered) keeps its meaning on an
    idle machine and does not fail a loaded one for the load alone."""
    return seconds * slowdown()


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode("ascii")


def unique(prefix: str = "q") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


FAULTY_SERVE = str(Path(__file__).with_name("faulty_serve.py"))
SHIFTED_SERVE = str(Path(__file__).with_name("shifted_serve.py"))

STORES = ("file", "libsql")
E2E_STORE = os.environ.get("MQLITE_E2E_STORE", "file")
if E2E_STORE not in STORES:
    raise RuntimeError(f"MQLITE_E2E_STORE must be one of {', '.join(STORES)}, got {E2E_STORE!r}")


def file_store_only(reason: str) -> pytest.MarkDecorator:
    """A test of the local database file itself: skipped with ``reason`` when the brokers
    run on sqld (MQLITE_E2E_STORE=libsql), where there is no such file."""
    return pytest.mark.skipif(
        E2E_STORE != "file", reason=f"local-file store only (brokers on sqld here): {reason}"
    )


def serve_command(
    addr: str | None, args: Sequence[str] = (), *, faulty: bool = False, script: str = ""
) -> list[str]:
    """``mqlite serve``; ``faulty``: with the storage fault seam (``faulty_serve.py``);
    ``script``: another wrapper that ends in serve (``shifted_serve.py``)."""
    if faulty:
        script = FAULTY_SERVE
    cmd = [sys.executable, script] if script else [sys.executable, "-m", "mqlite.cli.main", "serve"]
    if addr is not None:
        cmd += ["--addr", addr]
    return cmd + list(args)


def base_env(db: Path, extra: Mapping[str, str | None]) -> dict[str, str]:
    """The parent environment minus every MQLITE_* variable, plus the test's values
    (``None`` = leave the variable unset)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env["MQLITE_DB"] = f"file:{db}"
    env["PYTHONUNBUFFERED"] = "1"
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@dataclass
class Broker:
    proc: subprocess.Popen[bytes]
    host: str
    port: int
    db_path: Path
    stdout_path: Path
    stderr_path: Path
    token: str | None
    env: dict[str, str]
    _clients: list[httpx.Client] = field(default_factory=list)
    _admin: httpx.Client | None = None
    _anon: httpx.Client | None = None

    def __repr__(self) -> str:
        return f"<Broker {self.base_url} pid={self.proc.pid}>"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- HTTP -----------------------------------------------------------------------------

    def client(self, token: str | None = None, *, timeout: float = 30.0) -> httpx.Client:
        """A fresh keep-alive client; ``token`` (default none) as ``Bearer``."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        c = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)
        self._clients.append(c)
        return c

    @property
    def http(self) -> httpx.Client:
        """The shared keep-alive admin client (no token when auth is off)."""
        if self._admin is None:
            self._admin = self.client(self.token)
        return self._admin

    @property
    def anon(self) -> httpx.Client:
        """A shared keep-alive client that sends no Authorization header by default."""
        if self._anon is None:
            self._anon = self.client(None)
        return self._anon

    def rpc(
        self,
        method: str,
        body: Any = None,
        *,
        token: str | bool | None = True,
        content: bytes | None = None,
    ) -> httpx.Response:
        """POST ``/mqlite.v1.<method>``: ``token=True`` = the admin token, ``None`` = no
        Authorization header, a string = that Bearer token. ``content`` = raw body bytes
        (sent as ``application/json``, which every RPC requires)."""
        if token is True:
            c, headers = self.http, {}
        else:
            c = self.anon
            headers = {"Authorization": f"Bearer {token}"} if token else {}
        if content is not None:
            headers["Content-Type"] = "application/json"
            return c.post(RPC + method, content=content, headers=headers)
        return c.post(RPC + method, json=body if body is not None else {}, headers=headers)

    def ok(self, method: str, body: Any = None, *, token: str | bool | None = True) -> Any:
        """POST and assert 200; the decoded JSON."""
        r = self.rpc(method, body, token=token)
        assert r.status_code == 200, (method, r.status_code, r.text)
        assert r.headers["content-type"].startswith("application/json")
        return r.json()

    def err(
        self,
        method: str,
        body: Any,
        status: int,
        code: str,
        *,
        token: str | bool | None = True,
        content: bytes | None = None,
        reason: str | None = None,
    ) -> str:
        """POST and assert the error envelope; returns the message."""
        r = self.rpc(method, body, token=token, content=content)
        return assert_error(r, status, code, reason)

    # -- conveniences ---------------------------------------------------------------------

    def create_queue(self, name: str | None = None, **config: Any) -> str:
        name = name or unique()
        body: dict[str, Any] = {"name": name}
        if config:
            body["config"] = config
        assert self.ok("AdminService/CreateQueue", body) == {}
        return name

    def send(self, queue: str, *bodies: bytes | str, **extra: Any) -> list[int]:
        msgs = [{"body": b64(b)} for b in bodies]
        out = self.ok("QueueService/Send", {"queue": queue, "messages": msgs, **extra})
        return list(out["seq_numbers"])

    def receive(self, queue: str, n: int = 1, **extra: Any) -> list[dict[str, Any]]:
        out = self.ok("QueueService/Receive", {"queue": queue, "max_messages": n, **extra})
        return list(out["messages"])

    def create_key(
        self,
        permissions: Sequence[str],
        *,
        expires_at_ms: int = 0,
        name: str = "e2e",
        queues: Sequence[str] = (),
    ) -> tuple[str, str]:
        """A managed key (``queues``: its scope patterns); returns (id, token)."""
        key_id = uuid.uuid4().hex
        body: dict[str, Any] = {"id": key_id, "name": name, "permissions": list(permissions)}
        if expires_at_ms:
            body["expires_at_ms"] = expires_at_ms
        if queues:
            body["queues"] = list(queues)
        out = self.ok("AuthService/CreateKey", body)
        return key_id, out["token"]

    # -- process --------------------------------------------------------------------------

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def close_clients(self) -> None:
        for c in self._clients:
            c.close()
        self._clients.clear()
        self._admin = self._anon = None

    def signal(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float = STOP_DEADLINE_S) -> int:
        """SIGTERM, wait; the whole process group is SIGKILLed after ``timeout``."""
        self.close_clients()
        self.signal(signal.SIGTERM)
        rc = self.wait(timeout)
        if rc is None:
            kill_group(self.proc)
            rc = self.proc.wait(timeout=5)
        return rc


def _nofile_limit(n: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return apply


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group this test started (gunicorn master + its worker)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


# The additive ``reason`` of an envelope, by the code it refines (the original broker's
# clients read only code and message; ours rebuild the subclass from the reason).
REASONS = {
    "queue_not_found": "not_found",
    "storage_full": "unavailable",
    "storage_unreachable": "unavailable",
    "unsupported_media_type": "invalid_argument",
    "headers_too_large": "invalid_argument",
    "request_timeout": "canceled",
    "queue_config_differs": "name_conflict",
    "queue_has_push": "name_conflict",
}


def assert_error(r: httpx.Response, status: int, code: str, reason: str | None = None) -> str:
    """Assert the error envelope; ``reason`` given = it must be exactly that one."""
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert set(body) in ({"code", "message"}, {"code", "message", "reason"}), body
    assert body["code"] == code, body
    if "reason" in body:
        assert REASONS.get(body["reason"]) == code, body
    if reason is not None:
        assert body.get("reason") == (reason or None), body
    assert isinstance(body["message"], str) and body["message"], body
    return str(body["message"])


def wait_healthy(proc: subprocess.Popen[bytes], url: str, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} before becoming healthy")
        try:
            r = httpx.get(url + "/healthz", timeout=1.0)
            if r.status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"broker not healthy within {deadline_s} s")


class BrokerFactory:
    """Starts brokers; every one still running is stopped at teardown."""

    def __init__(self, root: Path, store: str = E2E_STORE) -> None:
        self.root = root
        self.store = store
        self.started: list[Broker] = []
        self.spawned: list[subprocess.Popen[bytes]] = []
        self._n = 0
        self._sqlds: dict[Path, Any] = {}  # database path -> its sqld (store "libsql")

    def remote_dsn(self, db: Path) -> str:
        """The libSQL server standing for the database file ``db``: started (fresh, on its
        own data directory beside ``db``) the first time that path is asked for."""
        from sqld_harness import Sqld, sqld_binary  # tests/ is on sys.path (its conftest)

        server = self._sqlds.get(db)
        if server is None:
            server = Sqld(sqld_binary(), db.with_name(db.name + ".sqld")).start()
            self._sqlds[db] = server
        return str(server.url)

    def _paths(self) -> tuple[Path, Path, Path]:
        self._n += 1
        d = self.root / f"broker{self._n}"
        d.mkdir(parents=True, exist_ok=True)
        return d, d / "stdout.txt", d / "stderr.txt"

    def spawn(
        self,
        env: Mapping[str, str | None] | None = None,
        args: Sequence[str] = (),
        *,
        addr: str | None = "auto",
        db_path: Path | None = None,
        faulty: bool = False,
        nofile: int | None = None,
        script: str = "",
    ) -> tuple[subprocess.Popen[bytes], Path, Path, Path, dict[str, str], int]:
        """Start a serve process without waiting for it (for startup-failure tests);
        ``nofile`` = its soft and hard descriptor limit (systemd's 1024, say)."""
        d, out, err = self._paths()
        db = db_path or d / "mq.db"
        port = free_port()
        if addr == "auto":
            addr = f"127.0.0.1:{port}"
        full_env = base_env(db, env or {})
        if self.store == "libsql" and "MQLITE_DB" not in (env or {}):
            full_env["MQLITE_DB"] = self.remote_dsn(db)
        with out.open("wb") as fo, err.open("wb") as fe:
            proc = subprocess.Popen(
                serve_command(addr, args, faulty=faulty, script=script),
                env=full_env,
                stdout=fo,
                stderr=fe,
                stdin=subprocess.DEVNULL,
                cwd=d,
                start_new_session=True,  # own process group: teardown can reap the worker
                preexec_fn=None if nofile is None else _nofile_limit(nofile),
            )
        self.spawned.append(proc)
        return proc, db, out, err, full_env, port

    def __call__(
        self,
        env: Mapping[str, str | None] | None = None,
        args: Sequence[str] = (),
        *,
        token: str | None = ADMIN_TOKEN,
        db_path: Path | None = None,
        host: str = "127.0.0.1",
        addr: str | None = "auto",
        faulty: bool = False,
        nofile: int | None = None,
        script: str = "",
    ) -> Broker:
        """Start a broker and wait for ``/healthz``. ``env`` defaults MQLITE_TOKENS to the
        admin token; pass ``{"MQLITE_TOKENS": "off"}`` (and ``token=None``) for auth off."""
        merged: dict[str, str | None] = {"MQLITE_TOKENS": ADMIN_TOKEN}
        merged.update(env or {})
        proc, db, out, err, full_env, port = self.spawn(
            merged, args, addr=addr, db_path=db_path, faulty=faulty, nofile=nofile, script=script
        )
        explicit = addr if addr != "auto" else None
        if addr is None:  # listening where MQLITE_ADDR says
            explicit = full_env.get("MQLITE_ADDR")
        if explicit:
            port = int(explicit.rsplit(":", 1)[1])
        broker = Broker(proc, host, port, db, out, err, token, full_env)
        self.started.append(broker)
        try:
            wait_healthy(proc, broker.base_url, STARTUP_DEADLINE_S)
        except RuntimeError as exc:
            broker.stop()
            pytest.fail(f"{exc}\nstdout:\n{broker.stdout()}\nstderr:\n{broker.stderr()[-4000:]}")
        return broker

    def teardown(self) -> None:
        for b in self.started:
            if b.proc.poll() is None:
                b.stop()
            else:
                b.close_clients()
        for proc in self.spawned:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=STOP_DEADLINE_S)
            # Whatever is left of a process group this factory started (an orphaned worker).
            kill_group(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        for server in self._sqlds.values():  # after the brokers: they release their leases
            server.stop()
        self._sqlds.clear()


@pytest.fixture(name="broker_factory")
def broker_factory_fixture(tmp_path: Path) -> Iterator[BrokerFactory]:
    """``broker_factory``: brokers of one test's own, each a real ``mqlite serve``, all
    stopped after it; every tier that starts brokers imports it into its conftest."""
    factory = BrokerFactory(tmp_path / "brokers")
    try:
        yield factory
    finally:
        factory.teardown()

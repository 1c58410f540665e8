"""The broker as a container (``--image IMG``): what a drill kills and restarts is the
operator's own appliance image, not a ``mqlite serve`` of this checkout.

Each ``start`` runs a NEW container of the image on the same data directory (a bind
mount at ``/data``: the restarted service finds the file the dead one left, as a
volume), ``--network host`` with ``MQLITE_ADDR=127.0.0.1:PORT`` so it listens on
loopback only, as the image's own non-root user (the directory is chowned to it). The
administrator token goes in through ``--env-file`` (a 0600 file the drill writes), never
on podman's argv. ``kill`` is ``podman kill -s SIG`` (the signal to the container's main
process: SIGKILL is the death of the whole service, SIGTERM its graceful drain), then
the container is removed. ``CONTAINERS_CONF`` and the rest of the caller's environment
reach podman unchanged (on the CI machine it selects runc, ops/ci/containers.conf).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import drillkit


def engine_env() -> dict[str, str]:
    """The caller's environment without MQLITE_* (the drill decides the broker's)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}


def engine(*argv: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(
        ["podman", *argv],
        env=engine_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and done.returncode != 0:
        raise drillkit.DrillError(f"podman {argv[0]} failed: {done.stderr.strip()[-600:]}")
    return done.stdout


def image_user(image: str) -> tuple[int, int]:
    """The uid:gid the image runs as (the Dockerfile's USER; 10001 for mqlite)."""
    out = engine("image", "inspect", "--format", "{{json .Config.User}}", image)
    user = json.loads(out.strip() or '""') or "0:0"
    uid, _, gid = user.partition(":")
    if not uid.isdigit() or not (gid or uid).isdigit():
        raise drillkit.DrillError(f"{image} runs as {user!r}: a numeric uid:gid is needed")
    return int(uid), int(gid or uid)


@dataclass
class ContainerBroker:
    """The image serving ``db`` (its directory mounted at /data); restartable on it."""

    image: str
    db: Path
    logdir: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    token: str = field(default_factory=lambda: "mqk_drill_" + secrets.token_hex(16))
    port: int = field(default_factory=drillkit.free_port)
    name: str = ""
    starts: int = 0
    prefix: str = field(default_factory=lambda: f"mqlite-drill-{secrets.token_hex(3)}")

    def __post_init__(self) -> None:
        atexit.register(self.kill)  # no container outlives the drill, even one that FAILs

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self.db.parent

    def path_inside(self, host: Path) -> str:
        """The path the container sees for ``host`` (a file of the data directory)."""
        return f"/data/{host.relative_to(self.data_dir)}"

    def _own_data(self) -> None:
        """The image's user must own the directory and the database files in it."""
        uid, gid = image_user(self.image)
        paths = [self.data_dir, *self.data_dir.iterdir()]
        if os.geteuid() == 0:
            for p in paths:
                os.chown(p, uid, gid)
        else:  # rootless podman: the image's uid lives in the user namespace
            engine("unshare", "chown", f"{uid}:{gid}", *map(str, paths))

    def start(self, extra: Mapping[str, str] | None = None) -> float:
        """Run a new container and wait for /healthz; the seconds it took."""
        self._own_data()
        self.starts += 1
        self.name = f"{self.prefix}-{self.starts}"
        env = {
            "MQLITE_DB": f"file:{self.path_inside(self.db)}",
            "MQLITE_ADDR": f"127.0.0.1:{self.port}",
            "MQLITE_TOKENS": self.token,
            **self.extra_env,
            **(extra or {}),
        }
        env_file = self.logdir / f"{self.name}.env"
        fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.writelines(f"{k}={v}\n" for k, v in env.items())
        began = time.monotonic()
        engine(
            "run", "-d", "--name", self.name, "--network", "host", "--restart", "unless-stopped",
            "-v", f"{self.data_dir}:/data", "--env-file", str(env_file), self.image,
        )  # fmt: skip
        env_file.unlink()
        deadline = began + drillkit.STARTUP_DEADLINE_S * 2
        while time.monotonic() < deadline:
            state = self.state()
            if state.get("Status") == "exited":
                raise drillkit.DrillError(
                    f"the container exited {state.get('ExitCode')}: {self.log_tail()}"
                )
            if drillkit.healthy(self.url):
                return time.monotonic() - began
            time.sleep(0.1)
        self.kill()
        raise drillkit.DrillError(f"{self.name} did not answer /healthz in time")

    def state(self) -> dict[str, object]:
        out = engine("inspect", "--format", "{{json .State}}", self.name, check=False)
        return dict(json.loads(out)) if out.strip() else {}

    @property
    def main_pid(self) -> int | None:
        """The host pid of the container's main process (its RSS is the service's)."""
        pid = self.state().get("Pid") if self.name else None
        return pid if isinstance(pid, int) and pid > 0 else None

    def crash_main_process(self) -> float:
        """SIGKILL of the container's main process from the host (not ``podman kill``,
        which counts as a stop): the engine's ``restart: unless-stopped`` must bring the
        same container back on its volume. The seconds until /healthz answers again."""
        pid, restarts = self.main_pid, self.state_restarts()
        if pid is None:
            raise drillkit.DrillError(f"{self.name} has no main process to kill")
        began = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        deadline = began + drillkit.STARTUP_DEADLINE_S * 2
        while time.monotonic() < deadline:
            restarted = self.state_restarts() > restarts and self.main_pid not in (None, pid)
            if restarted and drillkit.healthy(self.url):
                return time.monotonic() - began
            time.sleep(0.1)
        raise drillkit.DrillError(f"{self.name} was not restarted by its restart policy")

    def state_restarts(self) -> int:
        out = engine("inspect", "--format", "{{.RestartCount}}", self.name, check=False)
        return int(out.strip() or 0)

    def describe(self) -> str:
        """Which broker served, as the report shows it (uid read from the host's /proc)."""
        pid = self.main_pid
        uid = "?"
        if pid is not None:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("Uid:"):
                    uid = line.split()[1]
        return f"container {self.name} of {self.image}, main process uid {uid}"

    def log_tail(self) -> str:
        return engine("logs", self.name, check=False)[-600:] if self.name else ""

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """SIGKILL: ``podman kill -s KILL`` then remove the container at once (its restart
        policy would bring it back: the drill starts the next one itself). SIGTERM:
        ``podman stop`` (the image's STOPSIGNAL, a user stop, so no restart) and let it
        drain. The container's log is kept in the drill's log directory."""
        if not self.name:
            return
        if sig == signal.SIGKILL:
            engine("kill", "-s", "KILL", self.name, check=False)
        else:
            engine("stop", "-t", "30", self.name, check=False, timeout=60)
        (self.logdir / f"{self.name}.log").write_text(engine("logs", self.name, check=False))
        engine("rm", "-f", "-t", "0", self.name, check=False)
        self.name = ""

    def stop(self) -> None:
        self.kill(signal.SIGTERM)


def broker(image: str, db: Path, logdir: Path) -> drillkit.Broker | ContainerBroker:
    """The drill's broker: ``--image`` as a container, else a ``mqlite serve`` process."""
    return ContainerBroker(image, db, logdir) if image else drillkit.Broker(db, logdir)


def endpoint_or_broker(
    report: drillkit.Report, args: argparse.Namespace, db: Path, logdir: Path, label: str
) -> tuple[drillkit.Broker | ContainerBroker | None, str, str]:
    """``(broker, url, token)`` the drill runs against: ``--endpoint`` (its token from
    MQLITE_TOKEN; no broker of ours), else one it starts on ``db`` (``broker``), named in
    the report under ``label``."""
    if args.endpoint:
        return None, args.endpoint.rstrip("/"), os.environ.get("MQLITE_TOKEN", "")
    started = broker(args.image, db, logdir)
    started.start()
    report.figure(label, started.describe())
    return started, started.url, started.token

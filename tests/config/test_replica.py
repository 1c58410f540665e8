"""MQLITE_REPLICA_*: the Litestream configuration and command lines the launcher builds
(docs/replication.md). The real run is tests/replication; these pin the contract fast."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from mqlite import replica
from mqlite.config import ConfigError, Settings, checkpoint_from_env

SECRET = "wJalr/secret$HOME+x="


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    (tmp_path / "id").write_text("AKIDEXAMPLE\n")
    (tmp_path / "secret").write_text(SECRET + "\n")
    env = {
        "MQLITE_REPLICA_URL": "s3://backups/mq/prod",
        "MQLITE_REPLICA_ENDPOINT": "http://127.0.0.1:9000",
        "MQLITE_REPLICA_REGION": "eu-west-1",
        "MQLITE_REPLICA_ACCESS_KEY_ID_FILE": str(tmp_path / "id"),
        "MQLITE_REPLICA_SECRET_ACCESS_KEY_FILE": str(tmp_path / "secret"),
        "MQLITE_LITESTREAM": "/opt/mqlite/bin/litestream",
    }
    env.update(extra)
    return env


def test_the_configuration_names_the_file_bucket_path_endpoint_and_secrets(
    tmp_path: Path,
) -> None:
    rep = replica.from_env(_env(tmp_path), "/data/mq.db")
    config, sock = replica.write_config(rep, str(tmp_path / "run"))
    assert stat.S_IMODE(os.stat(config).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "run").st_mode) == 0o700
    doc = json.loads(Path(config).read_text())
    assert doc["socket"] == {"enabled": True, "path": sock}
    (db,) = doc["dbs"]
    assert db["path"] == "/data/mq.db"
    assert db["shutdown-sync-timeout"] == "4s"  # the final sync fits the supervisors' 15 s
    assert db["replica"] == {
        "type": "s3",
        "bucket": "backups",
        "path": "mq/prod",
        "sync-interval": "1s",
        "endpoint": "http://127.0.0.1:9000",
        "force-path-style": True,
        "region": "eu-west-1",
        "access-key-id": "AKIDEXAMPLE",
        "secret-access-key": SECRET,
    }
    assert SECRET not in repr(rep)


def test_secrets_never_reach_argv_or_the_brokers_environment(tmp_path: Path) -> None:
    env = _env(tmp_path, MQLITE_REPLICA_SECRET_ACCESS_KEY_FILE="", **{})
    env["MQLITE_REPLICA_SECRET_ACCESS_KEY"] = SECRET  # the inline form (fly secrets)
    env.pop("MQLITE_REPLICA_SECRET_ACCESS_KEY_FILE")
    rep = replica.from_env(env, "/data/mq.db")
    config, sock = replica.write_config(rep, str(tmp_path / "run"))
    argv = replica.replicate_argv(rep, config, ["mqlite", "serve"]) + replica.restore_argv(
        rep, config
    )
    assert SECRET not in " ".join(argv) and "AKIDEXAMPLE" not in " ".join(argv)
    assert "-no-expand-env" in argv  # a "$" in a secret stays a "$"
    child = replica.child_environ(env, sock)
    assert SECRET not in child.values()
    assert not any(k.startswith("MQLITE_REPLICA_SECRET") or "ACCESS_KEY" in k for k in child)
    assert child[replica.SOCKET_VAR] == sock and child["MQLITE_REPLICA_URL"]


def test_startup_restore_only_when_the_file_is_missing_and_a_replica_exists(
    tmp_path: Path,
) -> None:
    rep = replica.from_env(_env(tmp_path), "/data/mq.db")
    argv = replica.restore_argv(rep, "/run/c.json")
    assert argv[-3:] == ["-if-db-not-exists", "-if-replica-exists", "/data/mq.db"]
    assert replica.restore_argv(rep, "/run/c.json", output="/tmp/x.db")[-3:] == [
        "-o",
        "/tmp/x.db",
        "/data/mq.db",
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"MQLITE_REPLICA_URL": "https://backups/mq"}, "s3://bucket/path"),
        ({"MQLITE_REPLICA_URL": "s3:///nobucket"}, "s3://bucket/path"),
        ({"MQLITE_REPLICA_URL": "s3://b/p?endpoint=x"}, "s3://bucket/path"),
        ({"MQLITE_REPLICA_ENDPOINT": "ftp://h"}, "http(s)://"),
        ({"MQLITE_REPLICA_SYNC_INTERVAL": "soon"}, "MQLITE_REPLICA_SYNC_INTERVAL"),
        ({"MQLITE_REPLICA_SECRET_ACCESS_KEY_FILE": ""}, "both replica credentials"),
        ({"MQLITE_REPLICA_REGION": "eu\nwest"}, "control characters"),
    ],
)
def test_bad_replica_settings_are_refused_by_name(
    tmp_path: Path, change: dict[str, str], message: str
) -> None:
    env = {k: v for k, v in {**_env(tmp_path), **change}.items() if v}
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        replica.from_env(env, "/data/mq.db")


def test_a_memory_database_cannot_be_replicated(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="database file"):
        replica.from_env(_env(tmp_path), None)


def test_a_socket_path_too_long_for_sun_path_is_refused(tmp_path: Path) -> None:
    rep = replica.from_env(_env(tmp_path), "/data/mq.db")
    with pytest.raises(ConfigError, match="too long"):
        replica.write_config(rep, "/tmp/" + "d" * 120)


def test_replication_makes_the_engine_checkpoint_passively() -> None:
    assert checkpoint_from_env({}) == "TRUNCATE"
    assert checkpoint_from_env({"MQLITE_REPLICA_URL": "s3://b/p"}) == "PASSIVE"
    assert checkpoint_from_env({"MQLITE_CHECKPOINT": "passive"}) == "PASSIVE"
    with pytest.raises(ConfigError, match="block behind Litestream"):
        checkpoint_from_env({"MQLITE_REPLICA_URL": "s3://b/p", "MQLITE_CHECKPOINT": "truncate"})
    with pytest.raises(ConfigError, match="not truncate or passive"):
        checkpoint_from_env({"MQLITE_CHECKPOINT": "full"})
    assert Settings.from_env({"MQLITE_REPLICA_URL": "s3://b/p"}).checkpoint == "PASSIVE"

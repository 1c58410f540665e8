"""The replicated appliance (issue #19): the real image with MQLITE_REPLICA_URL, moto's S3
on loopback, credentials as mounted secret files; the container and its volume are
destroyed and a fresh container on an empty volume restores every acknowledged message.

``--network host``: the container reaches the loopback S3 and publishes nothing beyond
loopback (the broker binds 127.0.0.1 through MQLITE_ADDR)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from appliance_support import REPO, Rpc, free_port, healthy, inspect, name, podman, wait_for

sys.path.insert(0, str(REPO / "tests" / "replication"))
from replication_support import KEY_ID, S3, SECRET, s3_server

from mqlite.clock import SystemClock

TOKEN = "mqk_container_replica_" + "c" * 32
CLOCK = SystemClock()


@pytest.fixture
def s3() -> Iterator[S3]:
    with s3_server() as server:
        yield server


def _run(image: str, s3: S3, secrets: Path, vol: str) -> tuple[str, str]:
    cname, port = name("replicated"), free_port()
    podman(
        "run", "-d", "--name", cname, "--network", "host", "--read-only",
        "--tmpfs", "/tmp", "-v", f"{vol}:/data", "-v", f"{secrets}:/run/secrets:ro",
        "-e", f"MQLITE_ADDR=127.0.0.1:{port}", "-e", f"MQLITE_TOKENS={TOKEN}",
        "-e", f"MQLITE_REPLICA_URL=s3://{s3.bucket}/container",
        "-e", f"MQLITE_REPLICA_ENDPOINT={s3.endpoint}", "-e", "MQLITE_REPLICA_REGION=us-east-1",
        "-e", "MQLITE_REPLICA_ACCESS_KEY_ID_FILE=/run/secrets/replica-key-id",
        "-e", "MQLITE_REPLICA_SECRET_ACCESS_KEY_FILE=/run/secrets/replica-secret",
        image,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_for(f"{cname} /healthz", lambda: healthy(url), timeout=90)
    return cname, url


def test_a_destroyed_volume_is_restored_by_a_fresh_container(
    image: str, s3: S3, tmp_path: Path
) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o755)
    for file, value in (("replica-key-id", KEY_ID), ("replica-secret", SECRET)):
        (secrets / file).write_text(value + "\n")
        (secrets / file).chmod(0o644)  # the container's uid 10001 reads the mount
    vol = name("data")
    cname, url = _run(image, s3, secrets, vol)
    pid1 = Path(f"/proc/{inspect(cname)['State']['Pid']}/cmdline").read_bytes().split(b"\0")
    assert pid1[0].endswith(b"litestream") and b"replicate" in pid1  # PID 1 is Litestream
    rpc = Rpc(url, TOKEN)
    rpc.create_queue("orders")
    sent = [f"order-{i:03d}" for i in range(100)]
    for body in sent:
        rpc.send("orders", body)
    acked_ms = CLOCK.now_ms()

    def synced() -> bool:
        rep = rpc.call("AdminService/Observe", {})["replication"]
        return rep["state"] == "available" and rep["last_sync_at_ms"] > acked_ms + 1200

    wait_for("a sync after the last ack", synced)
    rpc.close()
    logs = podman("logs", cname)
    podman("rm", "-f", "-t", "0", cname)  # SIGKILL: no final sync
    podman("volume", "rm", "-f", vol)

    fresh_vol = name("data")
    started = time.monotonic()
    fresh, url = _run(image, s3, secrets, fresh_vol)
    print(f"fresh container restored and healthy in {time.monotonic() - started:.1f} s")
    rpc = Rpc(url, TOKEN)
    assert rpc.receive_all("orders") == sent
    rpc.close()
    podman("stop", "-t", "15", fresh)  # SIGTERM to Litestream: it drains the broker, syncs
    assert inspect(fresh)["State"]["ExitCode"] == 0
    logs += podman("logs", fresh)
    assert "restored the database from the replica" in logs
    assert SECRET not in logs and KEY_ID not in logs

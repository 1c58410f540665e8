"""Restore time of a replicated database (issue #19): a broker under Litestream filled to
about ``--mb`` MB (default 100) of messages, replicated to moto's S3 on loopback, then the
volume destroyed and a fresh broker started on an empty one (restore + open + healthy).

Run from the repository root (not collected by pytest)::

    .venv/bin/python tests/bench/replica_restore_bench.py [--mb 100]

Printed: the database size, the time Litestream needed to ship it (``sync -wait``), the
time of a bare ``litestream restore -o`` and of a fresh broker's start-up restore, and the
ratio of the two (the broker's start on top of Litestream's own restore). moto keeps the
objects in memory on the same host: a real S3 adds the network's transfer time.
"""

from __future__ import annotations

import argparse
import json
import logging
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replication"))
from replication_support import replica_env, s3_server, start_broker

BODY = 256 * 1024  # per message; 4 per request


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=100)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)  # moto's werkzeug logs every request
    litestream = str(Path(sys.executable).parent / "litestream")
    work = Path(tempfile.mkdtemp(prefix="mqbench-", dir="/tmp"))
    try:
        with s3_server() as s3:
            data, log = work / "data", work / "broker.log"
            env = replica_env(s3, data, work / "run", "bench")
            broker = start_broker(env, data, log)
            broker.rpc("AdminService/CreateQueue", {"name": "big"})
            n = args.mb * (1 << 20) // BODY
            for _ in range(0, n, 4):  # random text: Litestream's LTX files are compressed
                broker.send("big", [secrets.token_hex(BODY // 2) for _j in range(4)])
            started = time.monotonic()
            sync = [litestream, "sync", "-wait", "-timeout", "600", "-socket"]
            out = subprocess.run(
                [*sync, broker.socket_path(), str(data / "mq.db")],
                capture_output=True, text=True, check=True, timeout=900,
            )  # fmt: skip
            shipped = time.monotonic() - started
            size = (data / "mq.db").stat().st_size + (data / "mq.db-wal").stat().st_size
            broker.kill()
            runtime = Path(env["TMPDIR"])
            cfg = next(runtime.glob("mqlite-litestream-*/litestream.json"), None)
            shutil.rmtree(data)
            assert cfg is not None
            started = time.monotonic()
            restored = work / "restored.db"
            subprocess.run(
                [litestream, "restore", "-no-expand-env", "-config", str(cfg),
                 "-o", str(restored), str(data / "mq.db")],
                check=True, timeout=900, env=env,
            )  # fmt: skip
            bare = time.monotonic() - started
            started = time.monotonic()
            fresh = start_broker(env, data, log)
            full = time.monotonic() - started
            (big,) = [q for q in fresh.observe()["queues"] if q["queue"] == "big"]
            count = big["active"]
            fresh.stop()
            print(json.loads(out.stdout) if out.stdout.strip().startswith("{") else out.stdout)
            print(f"database + WAL before the crash: {size / 1e6:.1f} MB ({n} messages)")
            print(f"litestream sync -wait (ship to S3): {shipped:.2f} s")
            print(f"litestream restore -o:              {bare:.2f} s")
            print(f"fresh broker, restore + healthy:    {full:.2f} s ({full / bare:.2f}x bare)")
            print(f"restored messages: {count} of {n}")
            assert count == n
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Send ×1 with a managed access key next to Send ×1 with the administrator token.

Run from the repository root (not collected by pytest)::

    .venv/bin/python tests/bench/auth_bench.py [--client auto|wrk|python] [-c N] [--rounds R]

One broker (``mqlite serve``, MQLITE_LOG_LEVEL=WARNING); a managed ``send`` key is created
through AuthService/CreateKey; each round measures the same single-message Send with the
admin token and with the managed key, interleaved, so host noise hits both alike. It
prints the best of each and their ratio; it asserts nothing. Target (issue 8): managed ≥
0.9× admin — a managed key is checked from the engine's in-memory key set, with no
writer round trip.
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from http_bench import (  # a sibling script, not a package
    CREATE_QUEUE,
    HOST,
    SEND,
    STATS,
    Loader,
    Server,
    broker_env,
    free_port,
    http_call,
    send_body,
    start_server,
)

CREATE_KEY = "/mqlite.v1.AuthService/CreateKey"
TARGET_RATIO = 0.9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("-c", "--connections", type=int, default=32)
    parser.add_argument("--duration", type=float, default=4.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    client = args.client
    if client == "auto":
        client = "wrk" if shutil.which("wrk") else "python"

    workdir = Path(tempfile.mkdtemp(prefix="mqlite-auth-bench-"))
    servers: list[Server] = []
    admin = "mqk_" + secrets.token_hex(32)
    loader = Loader(client, args.connections, args.warmup, args.duration, workdir)
    try:
        port = free_port()
        broker = start_server(
            "broker",
            [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"{HOST}:{port}"],
            broker_env(workdir, admin, "WARNING"),
            port,
            workdir,
            lambda p: http_call(p, STATS, {"queue": "none"}, admin)[0] in (200, 404),
            servers,
        )
        http_call(port, CREATE_QUEUE, {"name": "auth-bench"}, admin)
        status, created = http_call(
            port,
            CREATE_KEY,
            {"id": secrets.token_hex(16), "name": "bench", "permissions": ["send"]},
            admin,
        )
        if status != 200:
            raise RuntimeError(f"CreateKey: {status} {created!r}")
        managed = created["token"]
        body = send_body(1, "auth-bench")
        best = {"admin": 0.0, "managed": 0.0}
        for i in range(args.rounds):
            for name, token in (("admin", admin), ("managed", managed)):
                r = loader.post(broker, SEND, body, token)
                if r.errors:
                    raise RuntimeError(f"{name}: {r.errors} failed requests")
                best[name] = max(best[name], r.rps)
                print(f"round {i + 1} {name:8s} {r.rps:9,.0f} req/s", flush=True)
        ratio = best["managed"] / best["admin"] if best["admin"] else 0.0
        print()
        print(f"| Send ×1 ({client}, {args.connections} conns) | req/s (best of {args.rounds}) |")
        print("|---|---:|")
        print(f"| administrator token | {best['admin']:,.0f} |")
        print(f"| managed send key | {best['managed']:,.0f} |")
        verdict = "met" if ratio >= TARGET_RATIO else "NOT met"
        print(f"| ratio managed/admin | {ratio:.2f}x (target ≥ {TARGET_RATIO}x: {verdict}) |")
    finally:
        for s in servers:
            s.stop()
        time.sleep(0.1)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

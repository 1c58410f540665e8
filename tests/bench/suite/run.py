"""``make bench``: mqlite next to what users would pick instead, in ONE run on this machine.

    .venv/bin/python tests/bench/suite/run.py [--quick | --tiny] [--systems a,b,...]
        [--out bench-results.json] [--docs docs/benchmarks.md] [--img docs/img]
        [--no-plots] [--only a,b,...] [--instructions] [--compare OLD.json]

Every system answers the same scenarios (``cells.SCENARIOS``: one producer sending one
acknowledged message at a time; batches of 64 with one acknowledgement; a drain of a
filled queue, receiving and acknowledging in batches of up to 64; one producer beside one
consumer), mqlite embedded, over HTTP (sync SDK) and the raw sqlite3 floor also 4
producers sending single messages (``produce_p4``) and batches of 16 (``batch_16``),
mqlite and the raw sqlite3 floor also the body-size sweep (``deliver_<size>``),
mqlite embedded and over HTTP also 4 producers × 4 consumers, the same over 64 groups
and the long-poll latency (``workloads.py``), mqlite under wrk also Receive 256 +
CompleteBatch. After the repetitions, once each (``extras.py``): a deep backlog drained
with its file bloat and reclaim, a soak with ramp-down and consumer churn, and (full
mode or ``--instructions``) instructions per message under callgrind. Three repetitions,
interleaved: each repetition runs every scenario on every system, the systems' order
rotated, so host noise hits all of them alike. Servers (``servers.py``) start once,
before the first cell, each on a free loopback port in a temporary directory, and are
stopped on the way out; a server whose package is absent is reported as unavailable.

Writes the raw cells and the machine's load to ``--out``, regenerates the marked section
of ``--docs`` and the plots under ``--img``. ``--compare OLD.json`` then prints the
change of every figure from OLD (``--compare OLD.json --against NEW.json`` compares two
files without running anything). It asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cells  # noqa: E402
import extras  # noqa: E402
import httpload  # noqa: E402
import probes  # noqa: E402
import report  # noqa: E402
import servers  # noqa: E402
import sides_aio  # noqa: E402
import sides_base  # noqa: E402
import sides_local  # noqa: E402
import sides_net  # noqa: E402

REPO = HERE.parents[2]
# Messages per cell: one (produce_1, produce_p4, e2e), batch (produce_64, batch_16), drain,
# many (e2e_4x4, sessions_64g), longpoll; bytes per body-size cell; seconds of wrk load; and for the
# experiments run once (extras.py): backlog depth, soak phase and churn seconds, messages
# per instruction-count figure.
MODES: dict[str, dict[str, Any]] = {
    "tiny": {
        "one": 128,
        "batch": 256,
        "drain": 256,
        "sweep_bytes": 1 << 20,
        "reps": 2,
        "wrk_s": 1,
        "many": 128,
        "longpoll": 8,
        "backlog": 2_048,
        "soak_s": 0.4,
        "churn_s": 0.25,
        "instr_msgs": 64,
    },
    "quick": {
        "one": 256,
        "batch": 1_024,
        "drain": 1_024,
        "sweep_bytes": 2 << 20,
        "reps": 3,
        "wrk_s": 1,
        "many": 1_024,
        "longpoll": 50,
        "backlog": 20_000,
        "soak_s": 3,
        "churn_s": 0.25,
        "instr_msgs": 128,
    },
    "full": {
        "one": 2_048,
        "batch": 8_192,
        "drain": 8_192,
        "sweep_bytes": 16 << 20,
        "reps": 3,
        "wrk_s": 3,
        "many": 8_192,
        "longpoll": 200,
        "backlog": 200_000,
        "soak_s": 15,
        "churn_s": 0.25,
        "instr_msgs": 384,
    },
}
WRK = "mqlite-http-wrk"
BASES = ("mqlite-http-sdk-base", "mqlite-http-aio-base")  # sides_base.py: --sdk-base's SDKs
DEFAULT_SYSTEMS = [*sides_local.LOCAL, "mqlite-http-sdk", "mqlite-http-aio", *BASES, WRK,
                   *servers.STARTERS]  # fmt: skip
DEFAULT_SYSTEMS.remove("mqlite-http")  # the server behind mqlite-http-sdk, not a side
SWEEP_SYSTEMS = ("mqlite", "sqlite3")
BODY = bytes(range(256))


def host_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of the whole host since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7], sum(v)


def start_sides(
    names: list[str], tmp: Path, sdk_base: str = sides_base.DEFAULT_REV
) -> tuple[list, list, dict[str, str]]:
    """The sides to measure, the servers started for them, and why others are absent."""
    sides, started, absent = [], [], {}
    base_modules = None
    for name in names:
        if name in BASES:
            why = sides_base.missing(sdk_base)
            if why:
                absent[name] = why
                continue
            if base_modules is None:
                (tmp / "base").mkdir()
                base_modules = sides_base.load(sdk_base, tmp / "base")
        if name in sides_local.LOCAL:
            module = sides_local.NEEDS_MODULE.get(name)
            if module and importlib.util.find_spec(module) is None:
                absent[name] = f"Python package {module} not installed (pip install -e '.[bench]')"
                continue
            sides.append(sides_local.LOCAL[name]())
            continue
        server_name = "mqlite-http" if name.startswith("mqlite-http-") else name
        if server_name not in servers.STARTERS:
            raise SystemExit(f"unknown system {name!r}; known: {', '.join(DEFAULT_SYSTEMS)}")
        why = servers.missing(server_name) or (httpload.missing() if name == WRK else None)
        if why:
            absent[name] = why
            continue
        server = next((s for s in started if s.name == server_name), None)
        if server is None:
            try:
                server = servers.STARTERS[server_name](tmp)
            except (RuntimeError, OSError) as exc:
                absent[name] = f"did not start: {str(exc).splitlines()[0]}"
                continue
            started.append(server)
            print(f"bench: started {server.name} on port {server.port}", file=sys.stderr)
        if name == "mqlite-http-sdk-base":
            sides.append(sides_base.MqliteHttpSdkBase(server, base_modules))
        elif name == "mqlite-http-aio-base":
            sides.append(sides_base.MqliteHttpAioBase(server, base_modules))
        elif name == "mqlite-http-sdk":
            sides.append(sides_local.MqliteHttpSdk(server))
        elif name == "mqlite-http-aio":
            sides.append(sides_aio.MqliteHttpAio(server))
        elif name == WRK:
            sides.append(httpload.WrkSide(server))
        else:
            sides.append(sides_net.net_side(server))
    return sides, started, absent


def plan(
    sides: list, mode: dict[str, Any], only: set[str] | None = None
) -> list[list[tuple[object, str, int, bytes]]]:
    """One repetition's cells: every scenario, each over every system, order rotated
    (``only``: just these scenarios; a body-size cell is named ``deliver_<bytes>``)."""
    out: list[list[tuple[object, str, int, bytes]]] = []
    wrk = [s for s in sides if isinstance(s, httpload.WrkSide)]
    sides = [s for s in sides if s not in wrk]
    for scenario in cells.SCENARIOS:
        group = [s for s in sides if scenario.startswith("produce") or not s.produce_only]
        if scenario == "produce_64":
            group = [s for s in group if s.batch]
        n = mode["batch" if scenario == "produce_64" else "drain" if scenario == "drain" else "one"]
        out.append([(s, scenario, n, BODY) for s in group])
    for scenario in cells.PRODUCE_MORE:  # the variants (FULL, properties) too
        method = "produce_p4" if scenario == "produce_p4" else "produce_batch"
        group = [s for s in sides if hasattr(s, method)]
        out.append([(s, scenario, mode["one" if method == "produce_p4" else "batch"], BODY)
                    for s in group])  # fmt: skip
    for scenario in cells.MANY:
        group = [s for s in sides if hasattr(s, scenario) and not s.produce_only]
        n = mode["longpoll" if scenario == "longpoll" else "many"]
        out.append([(s, scenario, n, BODY) for s in group])
    for size in cells.BODY_SIZES:
        group = [s for s in sides if s.name in SWEEP_SYSTEMS]
        n = max(8, min(mode["one"], mode["sweep_bytes"] // size))
        out.append([(s, f"deliver_{size}", n, b"\x5a" * size) for s in group])
    out += [[(s, scenario, mode["wrk_s"], BODY) for s in wrk] for scenario in httpload.SCENARIOS]
    if only is not None:
        out = [[c for c in group if c[1] in only] for group in out]
    return [group for group in out if group]


def run(args: argparse.Namespace) -> dict[str, object]:
    mode = MODES[args.mode]
    names = args.systems.split(",") if args.systems else DEFAULT_SYSTEMS
    only = set(args.only.split(",")) if args.only else None
    results: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="mqbench-", dir=args.dir) as tmp_s:
        tmp = Path(tmp_s)
        sides, started, absent = start_sides(names, tmp, args.sdk_base)
        harness_rss_kb = probes.rss_kb([os.getpid()])
        groups = {s.name: s.pids() for s in started}
        sampler = probes.RssSampler({"harness": [os.getpid()], **groups}, every_s=1.0).start()
        load0, busy0, t0 = os.getloadavg(), host_ticks(), time.monotonic()
        try:
            for rep in range(mode["reps"]):
                for group in plan(sides, mode, only):
                    k = rep % len(group) if group else 0
                    for side, scenario, n, body in group[k:] + group[:k]:
                        if scenario in httpload.SCENARIOS:  # n: seconds of load
                            r = httpload.wrk_cell(side, scenario, rep, n, tmp)
                        else:
                            r = cells.run_cell(side, scenario, rep, n, body, tmp)
                        results.append(r.row())
                        print(f"bench: rep {rep} {scenario:<14} {side.name:<20} "
                              f"{r.rate:>10,.0f} msg/s", file=sys.stderr)  # fmt: skip
            with_instr = args.instructions or args.mode == "full"
            once, skipped = extras.run(mode, names, started, tmp, only, with_instr)
            absent.update(skipped)
        finally:
            rss_series = sampler.stop()
            for server in started:
                servers.stop(server)
        busy1, load1 = host_ticks(), os.getloadavg()
        own = os.times()
    busy = (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1])
    return {
        "meta": {
            "mode": args.mode,
            "reps": mode["reps"],
            "duration_s": round(time.monotonic() - t0, 1),
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "cpus": os.cpu_count(),
            "loadavg_start": [round(x, 2) for x in load0],
            "loadavg_end": [round(x, 2) for x in load1],
            "host_busy_fraction": round(busy, 3),
            "bench_process_cpu_s": round(own.user + own.system, 1),
            "harness_rss_kb": harness_rss_kb,
            "durability": {s.name: s.durability for s in sides},
            "unavailable": absent,
            "sdk_base": args.sdk_base,
        },
        "rss_kb_over_run": rss_series,  # name -> [(seconds since start, RSS kB)]
        "once": once,  # extras.py: backlog, soak, instructions (one run each, not repeated)
        "cells": results,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="mode", action="store_const", const="quick")
    g.add_argument("--tiny", dest="mode", action="store_const", const="tiny")
    p.set_defaults(mode="full")
    p.add_argument("--systems", help="comma-separated subset (default: all)")
    p.add_argument("--out", type=Path, default=REPO / "bench-results.json")
    p.add_argument("--docs", type=Path, default=REPO / "docs" / "benchmarks.md")
    p.add_argument("--img", type=Path, default=REPO / "docs" / "img")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--only", help="comma-separated scenarios and extras (default: all)")
    p.add_argument("--instructions", action="store_true",
                   help="count instructions under callgrind outside the full mode too")  # fmt: skip
    p.add_argument("--dir", help="where the temporary databases go (default: $TMPDIR)")
    p.add_argument("--sdk-base", default=sides_base.DEFAULT_REV, metavar="REV",
                   help="git revision whose SDK transports the -base sides run "
                   f"(default {sides_base.DEFAULT_REV})")  # fmt: skip
    p.add_argument("--compare", type=Path, metavar="OLD.json")
    p.add_argument("--against", type=Path, metavar="NEW.json", help="with --compare: no run")
    args = p.parse_args(argv)
    if args.against:
        if not args.compare:
            p.error("--against needs --compare OLD.json")
        print(report.compare(json.loads(args.compare.read_text()),
                             json.loads(args.against.read_text())))  # fmt: skip
        return 0
    # SIGTERM unwinds like Ctrl-C, so the servers started are stopped (run's finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    data = run(args)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    plots = [] if args.no_plots else report.plots(data, args.img)
    report.update_docs(args.docs, report.markdown(data, plots, args.docs.parent))
    print(f"bench: wrote {args.out}, {args.docs}" + "".join(f", {p}" for p in plots),
          file=sys.stderr)  # fmt: skip
    if args.compare:
        print(report.compare(json.loads(args.compare.read_text()), data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

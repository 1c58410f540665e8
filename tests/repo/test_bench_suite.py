"""The ``make bench`` harness (tests/bench/suite) in its tiny mode: it measures every
scenario on mqlite embedded, mqlite over HTTP (a real ``mqlite serve`` it starts and
stops, also under wrk) and the raw sqlite3 floor, runs the once-per-run experiments
(deep backlog with bloat and reclaim, soak with ramp-down and churn), writes the results
file, regenerates only the marked section of the report, and ``--compare`` shows the
change of a figure. The figures themselves are not asserted: this proves the harness
works, not how fast anything is. (Instruction counts are not run here: valgrind needs
~30 s only to start the interpreter; ``--instructions`` or the full mode runs them.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "tests" / "bench" / "suite" / "run.py"
SYSTEMS = ("mqlite", "sqlite3", "mqlite-http-sdk")
VARIANTS = ("mqlite-props", "mqlite-full")  # produce scenarios only
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, str(RUN), *args],
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_tiny_run_measures_every_scenario_and_regenerates_only_the_marked_section(
    tmp_path: Path,
) -> None:
    out, docs = tmp_path / "results.json", tmp_path / "benchmarks.md"
    docs.write_text(
        f"# Benchmarks\n\nhand-written intro\n\n{BEGIN}\nstale table\n{END}\n\n## kept\n"
    )
    bench("--tiny", "--systems", ",".join(SYSTEMS + VARIANTS), "--no-plots",
          "--out", str(out), "--docs", str(docs), "--dir", str(tmp_path))  # fmt: skip
    data = json.loads(out.read_text())
    cells = data["cells"]
    seen = {(c["system"], c["scenario"]) for c in cells}
    for system in SYSTEMS:
        for scenario in ("produce_1", "produce_64", "drain"):
            reps = [c for c in cells if (c["system"], c["scenario"]) == (system, scenario)]
            assert len(reps) == data["meta"]["reps"] == 2, (system, scenario)
            assert all(c["rate"] > 0 and c["client_cpu_us"] > 0 for c in reps)
    # The original's produce_p4 and batch_16 on mqlite, the floor and the SDK, and on the
    # produce-only variants (props_p4 is mqlite-props' produce_p4): every send acknowledged
    # and timed, the database grown by what was sent.
    for system in SYSTEMS + VARIANTS:
        for scenario in ("produce_p4", "batch_16"):
            reps = [c for c in cells if (c["system"], c["scenario"]) == (system, scenario)]
            assert len(reps) == 2 and all(c["rate"] > 0 for c in reps), (system, scenario)
            local = system != "mqlite-http-sdk"
            assert all(c["db_b"] > 0 for c in reps) or not local, (system, scenario)
        p4 = [c for c in cells if (c["system"], c["scenario"]) == (system, "produce_p4")]
        assert all(0 < c["p50_us"] <= c["p99_us"] for c in p4)
    assert ("mqlite-props", "drain") not in seen and ("mqlite-props", "e2e_4x4") not in seen
    # The body-size sweep runs on mqlite and the floor only, up to 1 MiB bodies.
    assert ("mqlite", "deliver_1048576") in seen and ("sqlite3", "deliver_64") in seen
    assert ("mqlite-http-sdk", "deliver_64") not in seen
    http = [c for c in cells if c["system"] == "mqlite-http-sdk"]
    assert all(c["broker_cpu_us"] is not None and c["broker_peak_rss_kb"] > 0 for c in http)
    # 4 producers × 4 consumers (receive loops, then mqlite.Receiver), the same over 64
    # groups, long-poll latency: mqlite only.
    for system in ("mqlite", "mqlite-http-sdk"):
        for scenario in ("e2e_4x4", "receiver_4x4", "sessions_64g", "longpoll"):
            reps = [c for c in cells if (c["system"], c["scenario"]) == (system, scenario)]
            assert len(reps) == 2 and all(c["rate"] > 0 for c in reps), (system, scenario)
    assert all(0 < c["p50_us"] <= c["p99_us"] for c in cells if c["scenario"] == "longpoll")
    assert ("sqlite3", "e2e_4x4") not in seen
    one = [c for c in cells if c["scenario"] == "produce_1"]
    assert all(0 < c["p50_us"] <= c["p99_us"] for c in one)
    assert all(c["db_b"] > 0 for c in one if c["system"] != "mqlite-http-sdk")

    # RSS of the harness and of every server it started, sampled across the whole run.
    rss = data["rss_kb_over_run"]
    assert set(rss) == {"harness", "mqlite-http"}
    assert all(pts and all(kb > 0 for _t, kb in pts) for pts in rss.values())

    # Once per run: the backlog drained window by window from its full depth to empty, the
    # file bloated by the backlog and given back by vacuum(); the soak ramped down to no
    # producer, its consumers reconnecting, every message sent completed.
    once = data["once"]
    backlog = once["backlog"]
    depths = [p["depth"] for p in backlog["points"]]
    assert depths[0] == backlog["depth"] == 2048 and depths == sorted(depths, reverse=True)
    assert all(p["rate"] > 0 and 0 < p["claim_p50_us"] <= p["claim_p99_us"]
               for p in backlog["points"])  # fmt: skip
    sizes = {k: v["footprint_bytes"] for k, v in backlog["sizes"].items()}
    assert sizes["filled"] > sizes["empty"] and sizes["reclaimed"] < sizes["drained"]
    soak = once["soak"]
    assert [p["producers"] for p in soak["phases"]] == [4, 2, 1, 0]
    assert soak["sent"] == soak["completed"] > 0 and soak["consumer_sessions"] > 2
    assert soak["rss_kb"]["broker"] and all(kb > 0 for _t, kb in soak["rss_kb"]["broker"])
    assert "instructions" not in once and "instructions" in data["meta"]["unavailable"]

    text = docs.read_text()
    assert text.startswith("# Benchmarks\n\nhand-written intro\n\n")
    assert text.endswith(f"{END}\n\n## kept\n")
    assert text.count(BEGIN) == 1 and "stale table" not in text
    section = text.split(BEGIN)[1]
    for system in SYSTEMS + VARIANTS:
        assert f"| {system} | " in section
    # Every name of the original's matrix appears, pointing at its table and row.
    matrix = section.split("### The original's scenario matrix")[1].split("\n### ")[0]
    for line in ("| produce_p1 | produce_1 (mqlite) |", "| produce_p4 | produce_p4 (mqlite) |",
                 "| batch_16 | batch_16 (mqlite) |", "| batch_64 | produce_64 (mqlite) |",
                 "| produce_p4_FULL | produce_p4 (mqlite-full) |",
                 "| props_p4 | produce_p4 (mqlite-props) |",
                 "| props_batch64 | produce_64 (mqlite-props) |"):  # fmt: skip
        assert line in matrix, line
    assert "| mqlite | " in section and "1.00×" in section  # the baseline row
    for heading in ("### produce_p4: 4 producer threads", "### batch_16: batches of 16",
                    "### 4 producers", "### e2e_4x4 on a group_fifo", "### Long-poll latency",
                    "### Deep backlog: drain of 2,048", "### Soak of mqlite serve"):  # fmt: skip
        assert heading in section, heading

    # A second run replaces the section (here: the floor's single sends, and mqlite serve
    # under wrk draining a prefilled queue by Receive 256 + CompleteBatch) instead of
    # appending one; --only keeps it to those scenarios.
    bench("--tiny", "--systems", "sqlite3,mqlite-http-wrk", "--no-plots",
          "--only", "produce_1,http_recv256_complete_c8",
          "--out", str(out), "--docs", str(docs), "--dir", str(tmp_path))  # fmt: skip
    again = docs.read_text()
    assert again.count(BEGIN) == 1 and again.endswith(f"{END}\n\n## kept\n")
    assert "| sqlite3 | " in again and "| mqlite-http-sdk | " not in again
    data = json.loads(out.read_text())
    assert {(c["system"], c["scenario"]) for c in data["cells"]} == {
        ("sqlite3", "produce_1"), ("mqlite-http-wrk", "http_recv256_complete_c8")}  # fmt: skip
    # Structure, not throughput (a loaded machine may finish few round trips in the tiny
    # run's 1 s of wrk): the broker worked, and what the cell counts is what CompleteBatch
    # settled, whole Receive batches of 256 from the deep prefilled queue (n is 1, the
    # floor of the rate's divisor, when no round trip ended inside the window).
    recv = [c for c in data["cells"] if c["system"] == "mqlite-http-wrk"]
    assert len(recv) == 2 and all(c["broker_cpu_us"] > 0 and c["wall_s"] > 0 for c in recv)
    assert all(c["n"] == 1 or c["n"] % 256 == 0 for c in recv), [c["n"] for c in recv]
    assert "Receive 256 + CompleteBatch" in again


def test_compare_prints_the_change_of_every_figure(tmp_path: Path) -> None:
    cell = {"system": "mqlite", "scenario": "produce_1", "rep": 0, "n": 10, "body": 256,
            "wall_s": 1.0, "rate": 1000.0, "client_cpu_us": 50.0, "broker_cpu_us": None,
            "client_peak_rss_kb": 40_000, "broker_peak_rss_kb": None, "written_b": 4096.0,
            "db_b": 300.0, "p50_us": 80.0, "p99_us": 200.0}  # fmt: skip
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({"meta": {}, "cells": [cell]}))
    new.write_text(json.dumps({"meta": {}, "cells": [dict(cell, rate=500.0, p99_us=300.0)]}))
    lines = bench("--compare", str(old), "--against", str(new)).stdout.splitlines()
    rate = next(line for line in lines if " rate " in line)
    assert rate.split()[-3:] == ["1,000.0", "500.0", "-50.0%"]
    assert next(line for line in lines if " p99_us " in line).endswith("+50.0%")
    assert next(line for line in lines if " client_cpu_us " in line).endswith("+0.0%")

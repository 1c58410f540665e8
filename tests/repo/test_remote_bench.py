"""The remote-store bench (tests/bench/remote/run.py) in its tiny mode, on a real sqld and
through a real delaying proxy process: it measures every scenario on the local file and
on sqld, counts the HTTP round trips, runs the group-commit cells with the writer's
batching on and off, writes the results file and the generated page, and stops the
processes it started. The speeds are not asserted (this proves the harness works); what
is asserted are counts and bounds that hold on any machine: a file makes no round trip,
a batch of 64 costs fewer round trips per message than single sends, batching off means
one COMMIT per message, batching on fewer, and a 1 ms proxy adds at least 2 ms per round
trip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "tests" / "bench" / "remote" / "run.py"
SCENARIOS = ("produce_1", "produce_64", "drain", "e2e", "produce_p4", "e2e_4x4", "outbox")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_tiny_run_counts_round_trips_and_shows_group_commit_on_and_off(tmp_path: Path) -> None:
    out, docs = tmp_path / "remote.json", tmp_path / "benchmarks-remote.md"
    done = subprocess.run(
        [sys.executable, str(RUN), "--tiny", "--delays", "0,1", "--out", str(out),
         "--docs", str(docs), "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())
    meta, cells, group = data["meta"], data["cells"], data["group"]
    assert meta["stores"] == ["file", "sqld", "sqld+1ms"]
    reps = meta["reps"]

    def rows(store: str, scenario: str) -> list[dict[str, object]]:
        return [c for c in cells if (c["system"], c["scenario"]) == (store, scenario)]

    for scenario in SCENARIOS:
        for store in ("file", "sqld"):
            got = rows(store, scenario)
            assert len(got) == reps and all(c["rate"] > 0 for c in got), (store, scenario)
        assert all(c["posts_per_msg"] == 0 for c in rows("file", scenario))
        assert all(c["posts_per_msg"] > 0 for c in rows("sqld", scenario))
    # Every send_one is at least one round trip; a send of 64 shares its few.
    one, batch = rows("sqld", "produce_1"), rows("sqld", "produce_64")
    assert all(c["posts_per_msg"] >= 1 and c["commits_per_msg"] == 1 for c in one)
    assert max(c["posts_per_msg"] for c in batch) < min(c["posts_per_msg"] for c in one)
    assert all(c["server_cpu_us"] is not None for c in one)
    # Through the proxy (1 ms each way): every round trip costs >= 2 ms more.
    slow = rows("sqld+1ms", "produce_1")
    assert len(slow) == reps
    assert all(c["p50_us"] >= c["posts_per_msg"] * 2000 for c in slow)
    assert not rows("sqld+1ms", "e2e_4x4")  # the delayed stores run the key scenarios only

    assert {g["store"] for g in group} == {"file", "sqld"}  # tiny: no group cell via a proxy
    for threads in (1, 8):
        mine = [g for g in group if (g["store"], g["threads"]) == ("sqld", threads)]
        on = [g for g in mine if g["batched"]]
        off = [g for g in mine if not g["batched"]]
        assert len(on) == len(off) == reps, threads
        assert all(g["commits_per_msg"] == 1 for g in off)  # batching off: one each
        if threads == 1:
            assert all(g["commits_per_msg"] == 1 for g in on)  # nothing ever queues
        else:
            assert all(g["commits_per_msg"] < 1 for g in on)  # calls shared a COMMIT
    for pid in meta["pids"]:
        assert not _alive(pid), pid  # sqld and the proxy were stopped

    page = docs.read_text()
    for heading in ("sqld next to the local file", "What group commit buys over the network"):
        assert heading in page
    assert "tests/bench/remote/run.py" in page and "| sqld+1ms |" in page

    # --baseline renders an earlier run's file next to this one (here: this run itself).
    sys.path.insert(0, str(RUN.parent))
    import remote_report

    data["meta"]["label"] = "the same run"
    compared = remote_report.render(data, baseline=data)
    assert "## Before and after: the same run" in compared
    assert "| `send_one` | sqld | 1 → 1 |" in compared  # one round trip, before and after

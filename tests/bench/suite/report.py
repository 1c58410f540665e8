"""From the cells of one run to what a reader sees: the tables in docs/benchmarks.md
(between the ``bench:begin``/``bench:end`` markers, regenerated, never hand-edited), the
plots, and the change of every figure against an older run (``--compare``).

Every figure is the median over the repetitions, the throughput with its min–max; the
ratio column is mqlite's embedded figure divided by the row's, both from this run.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import report_once

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
BASELINE = "mqlite"
METRICS = ("rate", "client_cpu_us", "broker_cpu_us", "client_peak_rss_kb",
           "broker_peak_rss_kb", "written_b", "db_b", "p50_us", "p99_us")  # fmt: skip
TITLES = {
    "produce_1": "produce_p1: one producer, one acknowledged message at a time (256 B bodies)",
    "produce_p4": "produce_p4: 4 producer threads (a connection each where the system has "
    "them), one acknowledged message at a time, no consumer (256 B)",
    "batch_16": "batch_16: batches of 16 messages, one acknowledgement per batch (256 B)",
    "produce_64": "batch_64: batches of 64 messages, one acknowledgement per batch (256 B)",
    "drain": "Drain of a filled queue: receive up to 64, acknowledge each (256 B)",
    "http_send_c1": "mqlite serve under wrk: Send of 1 message, 1 connection (256 B; the "
    "load of produce_p1 at wrk's client cost)",
    "http_send_c4": "mqlite serve under wrk: Send of 1 message, 4 connections (256 B; the "
    "load of produce_p4 at wrk's client cost)",
    "http_send_c8": "mqlite serve under wrk: Send of 1 message, 8 connections (256 B)",
    "http_send_c32": "mqlite serve under wrk: Send of 1 message, 32 connections (256 B)",
    "http_batch64_c32": "mqlite serve under wrk: Send of 64 messages, 32 connections (256 B)",
    "http_recv256_complete_c8": "mqlite serve under wrk: Receive 256 + CompleteBatch of what came "
    "back, 8 connections, on a prefilled queue (256 B; messages completed)",
    "e2e": "One producer (single sends) and one consumer (batches of up to 64) at once (256 B)",
    "e2e_4x4": "4 producers (single sends) and 4 consumers (receive 16, wait 20 ms, "
    "CompleteBatch) at once (256 B)",
    "receiver_4x4": "4 producers (single sends) and 4 mqlite.Receiver (16 handler threads "
    "each, long polls; a message completed when its handler returns) at once (256 B)",
    "sessions_64g": "e2e_4x4 on a group_fifo queue, each message in one of 64 random groups",
    "longpoll": "Long-poll latency: send one message to a consumer parked in receive("
    "wait 5 s); p50/p99 is send → delivery (paced: the rate is not a throughput)",
}


# The original's scenario names (original-behaviour.md §11, issue 17) -> (table, row).
# Its FULL and props scenarios are the ``-full`` and ``-props`` rows of the produce tables.
MATRIX = (
    ("produce_p1", "produce_1", "mqlite"),
    ("produce_p4", "produce_p4", "mqlite"),
    ("batch_16", "batch_16", "mqlite"),
    ("batch_64", "produce_64", "mqlite"),
    ("e2e_4x4", "e2e_4x4", "mqlite"),
    ("sessions_64g", "sessions_64g", "mqlite"),
    ("produce_p1_FULL", "produce_1", "mqlite-full"),
    ("produce_p4_FULL", "produce_p4", "mqlite-full"),
    ("props_p4", "produce_p4", "mqlite-props"),
    ("props_batch64", "produce_64", "mqlite-props"),
)


def _matrix(summ: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """One line per scenario of the original's matrix measured in this run."""
    lines = [
        "| original's scenario | table (row) | msg/s (min–max) | p50 / p99 µs |",
        "|---|---|---:|---:|",
    ]
    for name, scenario, system in MATRIX:
        v = summ.get((scenario, system))
        if v is None:
            continue
        lat = f"{_n(v['p50_us'])} / {_n(v['p99_us'])}" if v["p50_us"] is not None else "—"
        lines.append(f"| {name} | {scenario} ({system}) | {_n(v['rate'])} "
                     f"({_n(v['rate_min'])}–{_n(v['rate_max'])}) | {lat} |")  # fmt: skip
    return lines if len(lines) > 2 else []


def summarize(data: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(scenario, system) -> {metric: median, "rate_min", "rate_max", "n", "body"}."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for c in data["cells"]:
        groups[(c["scenario"], c["system"])].append(c)
    out = {}
    for key, rows in groups.items():
        s: dict[str, Any] = {"n": rows[0]["n"], "body": rows[0]["body"], "reps": len(rows)}
        for m in METRICS:
            vals = [r[m] for r in rows if r[m] is not None]
            s[m] = statistics.median(vals) if vals else None
        s["rate_min"] = min(r["rate"] for r in rows)
        s["rate_max"] = max(r["rate"] for r in rows)
        out[key] = s
    return out


def _n(x: float | None, digits: int = 0) -> str:
    if x is None:
        return "—"
    return f"{x:,.{digits}f}"


def _mb(kb: float | None) -> str:
    return "—" if kb is None else f"{kb / 1024:,.0f}"


def _table(summ: dict[tuple[str, str], dict[str, Any]], scenario: str) -> list[str]:
    rows = sorted((k[1], v) for k, v in summ.items() if k[0] == scenario)
    base = summ.get((scenario, BASELINE), {}).get("rate")
    lines = [
        "| system | msg/s (min–max) | mqlite ÷ this | client CPU µs/msg | broker CPU µs/msg "
        "| peak RSS MB client / broker | written B/msg | DB B/msg | p50 / p99 µs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for system, v in sorted(rows, key=lambda r: -r[1]["rate"]):
        ratio = f"{base / v['rate']:.2f}×" if base else "—"
        lat = f"{_n(v['p50_us'])} / {_n(v['p99_us'])}" if v["p50_us"] is not None else "—"
        lines.append(
            f"| {system} | {_n(v['rate'])} ({_n(v['rate_min'])}–{_n(v['rate_max'])}) "
            f"| {ratio} | {_n(v['client_cpu_us'], 1)} | {_n(v['broker_cpu_us'], 1)} "
            f"| {_mb(v['client_peak_rss_kb'])} / {_mb(v['broker_peak_rss_kb'])} "
            f"| {_n(v['written_b'])} | {_n(v['db_b'])} | {lat} |"
        )
    return lines


CLIENT_COLUMNS = (("produce_1", "http_send_c1"), ("produce_p4", "http_send_c4"),
                  ("e2e_4x4", None), ("receiver_4x4", None))  # fmt: skip


def _clients(summ: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """One row per remote client: msg/s and client CPU µs/msg per scenario (wrk's Send
    cells stand in for produce_p1 / produce_p4)."""
    systems = sorted({k[1] for k in summ if k[1].startswith(("mqlite-http", "redis"))})
    if not systems:
        return []
    lines = ["| client | " + " | ".join(f"{c[0]} msg/s | CPU µs/msg" for c in CLIENT_COLUMNS)
             + " |", "|---|" + "---:|---:|" * len(CLIENT_COLUMNS)]  # fmt: skip
    for system in systems:
        cols = []
        for scenario, wrk in CLIENT_COLUMNS:
            v = summ.get((wrk if system.endswith("-wrk") and wrk else scenario, system))
            cols.append(f"{_n(v['rate'])} | {_n(v['client_cpu_us'], 1)}" if v else "— | —")
        lines.append(f"| {system} | " + " | ".join(cols) + " |")
    return lines


def _sweep(summ: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    keys = sorted({k for k in summ if k[0].startswith("deliver_")},
                  key=lambda k: (int(k[0].split("_")[1]), k[1]))  # fmt: skip
    if not keys:
        return []
    lines = [
        "| body | system | messages | send+receive+complete msg/s (min–max) "
        "| written B per delivery | written ÷ body | CPU µs/msg |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for scenario, system in keys:
        v = summ[(scenario, system)]
        size = v["body"]
        lines.append(
            f"| {_size(size)} | {system} | {v['n']} | {_n(v['rate'])} "
            f"({_n(v['rate_min'])}–{_n(v['rate_max'])}) | {_n(v['written_b'])} "
            f"| {v['written_b'] / size:.2f} | {_n(v['client_cpu_us'], 1)} |"
        )
    return lines


def _size(b: int) -> str:
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return f"{b // k} {unit}"
    return f"{b} B"


def markdown(data: dict[str, Any], plots: list[Path], docs_dir: Path) -> str:
    meta, summ = data["meta"], summarize(data)
    out = [
        f"Generated by `make bench` (`tests/bench/suite/run.py`, mode `{meta['mode']}`, "
        f"{meta['reps']} interleaved repetitions, {meta['duration_s']} s); do not edit by hand. "
        f"Python {meta['python']}, SQLite {meta['sqlite']}, {meta['cpus']} CPUs. "
        f"Host load while it ran: {meta['host_busy_fraction']:.0%} of all CPUs busy "
        f"(this run included), load average {meta['loadavg_start'][0]} at the start and "
        f"{meta['loadavg_end'][0]} at the end: other work shared the machine, so read the "
        "ratios and the CPU time per message, not the absolute rates.",
        "",
        "Columns: throughput median over the repetitions with min–max; the ratio of "
        "mqlite's embedded throughput to the row's (above 1: mqlite is faster); CPU time per "
        "message of this process (the client, and for embedded systems the whole engine) "
        "and of the broker's processes (wrk's for the wrk tables); peak RSS during the cell "
        f"(the client's is the whole harness process, {meta.get('harness_rss_kb', 0) / 1024:.0f} "
        "MB before the first cell with every client library imported); bytes sent to storage "
        "per message by every process (`/proc/<pid>/io` `write_bytes`, WAL and journals "
        "included); growth of the data directory per message (a long-running server that "
        "reuses its WAL shows 0); per-message latency.",
        "",
    ]
    matrix = _matrix(summ)
    if matrix:
        out += ["### The original's scenario matrix, embedded", "",
                "Where each scenario of the Go original's bench is in the tables below: "
                "`-full` rows run with synchronous=FULL, `-props` rows send 6 properties "
                "+ message_id, subject, correlation_id and content_type. (The original's "
                "batch_16/batch_64 ran 4 producers; here one producer sends the batches.)",
                "", *matrix, ""]  # fmt: skip
    clients = _clients(summ)
    if clients:
        out += ["### The HTTP clients side by side", "",
                "One acknowledged single-message send at a time (produce_p1), 4 producers "
                "(produce_p4) and e2e_4x4, by client: the SDKs (`-base`: the same client "
                "with the transport of `--sdk-base`, loaded from git, measured in this "
                "run), wrk with 1 and 4 connections (its Send rows above), redis-py against "
                "Redis. msg/s and the client's CPU µs per message.", "",
                *clients, ""]  # fmt: skip
    for scenario, title in TITLES.items():
        if any(k[0] == scenario for k in summ):
            out += [f"### {title}", "", *_table(summ, scenario), ""]
    sweep = _sweep(summ)
    if sweep:
        out += ["### Body sizes: bytes written per delivery", "",
                "Each message sent alone, then drained (receive 64 + complete).", "",
                *sweep, ""]  # fmt: skip
    out += report_once.markdown(data.get("once") or {})
    out += ["### Durability of each system, as configured", ""]
    out += [f"- {name}: {how}" for name, how in sorted(meta["durability"].items())]
    if meta["unavailable"]:
        out += ["", "Not measured in this run:", ""]
        out += [f"- {name}: {why}" for name, why in sorted(meta["unavailable"].items())]
    for plot in plots:
        out += ["", f"![{plot.stem}]({os.path.relpath(plot, docs_dir)})"]
    return "\n".join(out) + "\n"


def update_docs(path: Path, section: str) -> None:
    """Replace what lies between the markers (appending them the first time)."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
    else:
        head, tail = text.rstrip("\n") + "\n\n", "\n"
    path.write_text(f"{head}{BEGIN}\n{section}{END}{tail}")


def plots(data: dict[str, Any], img: Path) -> list[Path]:
    """Throughput per scenario against the peers; bytes written per delivery by body size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img.mkdir(parents=True, exist_ok=True)
    summ = summarize(data)
    made = []
    scen = [s for s in TITLES if any(k[0] == s for k in summ)]
    fig, axes = plt.subplots(1, len(scen), figsize=(4.2 * len(scen), 4.2), squeeze=False)
    for ax, scenario in zip(axes[0], scen, strict=True):
        rows = sorted(((k[1], v) for k, v in summ.items() if k[0] == scenario),
                      key=lambda r: r[1]["rate"])  # fmt: skip
        names = [r[0] for r in rows]
        med = [r[1]["rate"] for r in rows]
        err = [[m - r[1]["rate_min"] for m, r in zip(med, rows, strict=True)],
               [r[1]["rate_max"] - m for m, r in zip(med, rows, strict=True)]]  # fmt: skip
        colors = ["tab:blue" if n.startswith("mqlite") else "tab:gray" for n in names]
        ax.barh(names, med, xerr=err, color=colors)
        ax.set_xscale("log")
        ax.set_title(scenario)
        ax.set_xlabel("messages/s (median, min–max)")
    fig.tight_layout()
    made.append(img / "bench-throughput.png")
    fig.savefig(made[-1], dpi=80)
    plt.close(fig)

    sweep = defaultdict(list)
    for (scenario, system), v in summ.items():
        if scenario.startswith("deliver_"):
            sweep[system].append((v["body"], v["written_b"]))
    if sweep:
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for system, pts in sorted(sweep.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=system)
        ax.plot([p[0] for p in pts], [p[0] for p in pts], ls=":", color="k", label="body")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("body bytes")
        ax.set_ylabel("bytes written per delivery")
        ax.legend()
        fig.tight_layout()
        made.append(img / "bench-bytes-per-delivery.png")
        fig.savefig(made[-1], dpi=80)
        plt.close(fig)
    series = data.get("rss_kb_over_run") or {}
    if series:
        xlabel = "seconds into the run (every scenario, 3 repetitions)"
        made.append(report_once.rss_plot(plt, series, xlabel, img / "bench-rss-over-run.png"))
    return made + report_once.plots(data.get("once") or {}, img, plt)


def compare(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Every figure present in both runs: old, new, and the change in percent."""
    a, b = summarize(old), summarize(new)
    lines = [f"{'scenario':<16} {'system':<20} {'figure':<20} {'old':>12} {'new':>12} change"]
    for key in sorted(a.keys() & b.keys()):
        for m in METRICS:
            x, y = a[key][m], b[key][m]
            if x is None or y is None:
                continue
            change = f"{(y - x) / x:+.1%}" if x else "n/a"
            lines.append(f"{key[0]:<16} {key[1]:<20} {m:<20} {x:>12,.1f} {y:>12,.1f} {change}")
    fa, fb = report_once.figures(old), report_once.figures(new)
    for key in sorted(fa.keys() & fb.keys()):
        x, y = fa[key], fb[key]
        change = f"{(y - x) / x:+.1%}" if x else "n/a"
        lines.append(f"{key[0]:<16} {'mqlite':<20} {key[1]:<20} {x:>12,.1f} {y:>12,.1f} {change}")
    for key in sorted(a.keys() - b.keys()):
        lines.append(f"{key[0]:<16} {key[1]:<20} only in the old run")
    for key in sorted(b.keys() - a.keys()):
        lines.append(f"{key[0]:<16} {key[1]:<20} only in the new run")
    return "\n".join(lines)

"""The report of the experiments run once per run (``extras.py``): tables for the
generated section of docs/benchmarks.md, the backlog plot (drain rate and claim latency
against the depth) and the soak plot (RSS over time while the load ramps down), and the
figures ``--compare`` follows (``figures``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _mb(b: float) -> str:
    return f"{b / (1 << 20):,.1f}"


def _backlog(b: dict[str, Any]) -> list[str]:
    sizes = b["sizes"]
    lines = [
        f"### Deep backlog: drain of {b['depth']:,} messages, bloat then reclaim (mqlite)",
        "",
        f"Filled in Sends of 64 at {b['fill_rate']:,.0f} msg/s, then drained by receive(64) + "
        f"complete_batch at a median {b['drain_rate_median']:,.0f} msg/s; the claim is the "
        "receive call alone. One run, not repeated.",
        "",
        "| depth at window start | drain msg/s | claim p50 / p99 µs |",
        "|---:|---:|---:|",
    ]
    points = b["points"]
    step = max(1, len(points) // 10)
    for p in points[::step] + ([points[-1]] if (len(points) - 1) % step else []):
        lines.append(f"| {p['depth']:,} | {p['rate']:,.0f} "
                     f"| {p['claim_p50_us']:,.0f} / {p['claim_p99_us']:,.0f} |")  # fmt: skip
    lines += [
        "",
        "| file | empty | filled | drained | after vacuum() |",
        "|---|---:|---:|---:|---:|",
    ]
    for key, label in (("db_bytes", "mq.db MB"), ("footprint_bytes", "db + WAL + SHM MB")):
        row = " | ".join(_mb(sizes[s][key]) for s in ("empty", "filled", "drained", "reclaimed"))
        lines.append(f"| {label} | {row} |")
    lines += ["", f"vacuum() (incremental) returned {b['pages_reclaimed']:,} pages.", ""]
    return lines


def _soak(s: dict[str, Any]) -> list[str]:
    r = s["broker_rss_kb"]
    lines = [
        f"### Soak of mqlite serve: ramp-down and consumer churn ({s['duration_s']} s)",
        "",
        f"Phases of {s['phase_s']} s with 4, 2, 1, 0 producers (SDK, single sends) while 2 "
        f"consumers reconnect every {s['churn_s']} s ({s['consumer_sessions']:,} client "
        f"sessions in all); {s['sent']:,} sent, {s['completed']:,} completed. Broker RSS "
        f"first / peak / last: {r['first'] / 1024:,.0f} / {r['peak'] / 1024:,.0f} / "
        f"{r['last'] / 1024:,.0f} MB.",
        "",
        "| producers | phase start s | sent | broker RSS MB at phase end |",
        "|---:|---:|---:|---:|",
    ]
    for p in s["phases"]:
        lines.append(f"| {p['producers']} | {p['start_s']} | {p['sent']:,} "
                     f"| {p['broker_rss_kb'] / 1024:,.0f} |")  # fmt: skip
    return [*lines, ""]


def _instructions(i: dict[str, Any]) -> list[str]:
    lines = [
        f"### Instructions per message (callgrind, embedded engine, {i['messages']} messages)",
        "",
        "Counted, not timed: the same code and input give the same count whatever else the "
        "machine runs. `tests/bench/instructions.py --against REV` compares two revisions.",
        "",
        "| figure | instructions per message |",
        "|---|---:|",
    ]
    lines += [f"| {f} | {v:,} |" for f, v in i["per_message"].items()]
    return [*lines, ""]


def markdown(once: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if "backlog" in once:
        out += _backlog(once["backlog"])
    if "soak" in once:
        out += _soak(once["soak"])
    if "instructions" in once:
        out += _instructions(once["instructions"])
    return out


def figures(data: dict[str, Any]) -> dict[tuple[str, str], float]:
    """(experiment, figure) -> value, for ``--compare``."""
    once, out = data.get("once") or {}, {}
    if "backlog" in once:
        b = once["backlog"]
        out[("backlog", "fill_rate")] = b["fill_rate"]
        out[("backlog", "drain_rate_median")] = b["drain_rate_median"]
        out[("backlog", "reclaimed_db_bytes")] = b["sizes"]["reclaimed"]["db_bytes"]
    if "soak" in once:
        out[("soak", "broker_rss_peak_kb")] = once["soak"]["broker_rss_kb"]["peak"]
        out[("soak", "broker_rss_last_kb")] = once["soak"]["broker_rss_kb"]["last"]
    for f, v in (once.get("instructions") or {}).get("per_message", {}).items():
        out[("instructions", f)] = v
    return out


def plots(once: dict[str, Any], img: Path, plt: Any) -> list[Path]:
    made = []
    if "backlog" in once:
        pts = once["backlog"]["points"]
        fig, ax = plt.subplots(figsize=(6.5, 4))
        depth = [p["depth"] for p in pts]
        ax.plot(depth, [p["rate"] for p in pts], marker="o", color="tab:blue")
        ax.set_xlabel("backlog depth (messages)")
        ax.set_ylabel("drain msg/s", color="tab:blue")
        ax.invert_xaxis()
        ax2 = ax.twinx()
        ax2.plot(depth, [p["claim_p50_us"] for p in pts], color="tab:orange", label="claim p50")
        ax2.plot(depth, [p["claim_p99_us"] for p in pts], ls="--", color="tab:orange",
                 label="claim p99")  # fmt: skip
        ax2.set_ylabel("receive(64) µs", color="tab:orange")
        ax2.legend(fontsize="small")
        fig.tight_layout()
        made.append(img / "bench-backlog-drain.png")
        fig.savefig(made[-1], dpi=80)
        plt.close(fig)
    if "soak" in once:
        s = once["soak"]
        made.append(
            rss_plot(
                plt,
                s["rss_kb"],
                "seconds into the soak (dotted: producers ramp down 4, 2, 1, 0)",
                img / "bench-soak-rss.png",
                phases=s["phases"],
            )
        )
    return made


def rss_plot(
    plt: Any, series: dict[str, Any], xlabel: str, out: Path, phases: Sequence[Any] = ()
) -> Path:
    """RSS over time, one line per process ([seconds, kB] points), with the soak's
    ``phases`` as dotted lines; written to ``out``."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, pts in sorted(series.items()):
        ax.plot([p[0] for p in pts], [p[1] / 1024 for p in pts], label=name)
    for p in phases:
        ax.axvline(p["start_s"], color="k", ls=":", lw=0.8)
        ax.annotate(f"{p['producers']}p", (p["start_s"], 0), xycoords=("data", "axes fraction"))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("RSS MB")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out

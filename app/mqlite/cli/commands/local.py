"""``vacuum``: return free pages of a LOCAL database file to the OS (never via a broker)."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

from mqlite.cli.args import output_flag
from mqlite.cli.context import Context, Failure
from mqlite.cli.output import size_text


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("vacuum", help="reclaim free DB pages (local only; stop the broker)")
    p.add_argument("--full", action="store_true", help="full VACUUM (rewrites the file)")
    output_flag(p)
    p.set_defaults(handler=vacuum)


def local_path(ctx: Context, command: str) -> str:
    """The database file of ``MQLITE_DB``; client mode and ``:memory:`` are refused."""
    target = ctx.target
    if target.remote:
        raise Failure(
            f"{command} is local-only: it opens the database file directly "
            "(unset MQLITE_ENDPOINT and set MQLITE_DB)"
        )
    text = target.dsn.removeprefix("file:").split("?", 1)[0]
    if text in ("", ":memory:"):
        raise Failure(f"{command} needs a database file, not {target.dsn!r}")
    return os.path.realpath(os.path.expanduser(text))


def files_size(path: str) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            total += os.path.getsize(path + suffix)
    return total


def vacuum(ctx: Context) -> int:
    """Sizes are what is on disk with nobody holding the database: before it is opened
    and after it is closed (closing checkpoints the WAL away), so the figures agree with
    each other: zero pages reclaimed is zero bytes freed."""
    path = local_path(ctx, "vacuum")
    if not os.path.exists(path):
        raise Failure(f"no database at {path}")
    before = files_size(path)
    client = ctx.embedded  # takes the single-writer lock: refused while a broker runs
    pages: int | None = None
    if ctx.args.full:
        client.vacuum_full()
    else:
        pages = int(client.reclaim_free_pages(force=True))
    ctx.close()
    after = files_size(path)
    delta = before - after
    mode = "full" if ctx.args.full else "incremental"
    if ctx.out.json:
        report: dict[str, object] = {
            "mode": mode,
            "before_bytes": before,
            "after_bytes": after,
            "freed_bytes": max(delta, 0),
            "grown_bytes": max(-delta, 0),
        }
        if pages is not None:
            report["reclaimed_pages"] = pages
        ctx.out.obj(report)
        return 0
    what = "full VACUUM" if pages is None else f"incremental vacuum: {pages} free page(s) reclaimed"
    change = f"freed {size_text(delta)}" if delta >= 0 else f"grew by {size_text(-delta)}"
    ctx.out.line(f"{what}; on disk {size_text(before)} -> {size_text(after)} ({change})")
    return 0

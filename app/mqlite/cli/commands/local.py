"""``vacuum``: return free pages of a LOCAL database file to the OS (never via a broker)."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

from mqlite.cli.args import output_flag
from mqlite.cli.context import Context, Failure


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
    path = local_path(ctx, "vacuum")
    if not os.path.exists(path):
        raise Failure(f"no database at {path}")
    client = ctx.embedded  # takes the single-writer lock: refused while a broker runs
    before = files_size(path)
    if ctx.args.full:
        client.vacuum_full()
        pages = -1
    else:
        pages = int(client.reclaim_free_pages(force=True))
    after = files_size(path)
    delta = before - after
    if ctx.out.json:
        ctx.out.obj(
            {
                "mode": "full" if ctx.args.full else "incremental",
                "before_bytes": before,
                "after_bytes": after,
                "freed_bytes": max(delta, 0),
                "grown_bytes": max(-delta, 0),
            }
        )
        return 0
    kind = "full VACUUM" if ctx.args.full else f"incremental ({pages} free pages reclaimed)"
    change = f"freed {delta} bytes" if delta >= 0 else f"grew by {-delta} bytes"
    ctx.out.line(f"{kind}: {before} -> {after} bytes, {change}")
    return 0

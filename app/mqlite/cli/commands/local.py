"""``vacuum``: return free pages of a LOCAL database file to the OS (never via a broker)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from mqlite.cli.args import output_flag
from mqlite.cli.context import Context, Failure
from mqlite.sdk.embedded import database_path


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
    path = database_path(target.dsn)
    if path is None:
        raise Failure(f"{command} needs a database file, not {target.dsn!r}")
    return path


def vacuum(ctx: Context) -> int:
    path = local_path(ctx, "vacuum")
    if not os.path.exists(path):
        raise Failure(f"no database at {path}")
    result = ctx.embedded.vacuum(full=ctx.args.full)  # the writer lock: refused beside a broker
    before, after = result.before_bytes, result.after_bytes
    delta = before - after
    if ctx.out.json:
        ctx.out.obj(
            {
                "mode": "full" if result.full else "incremental",
                "before_bytes": before,
                "after_bytes": after,
                "freed_bytes": max(delta, 0),
                "grown_bytes": max(-delta, 0),
            }
        )
        return 0
    kind = (
        "full VACUUM"
        if result.full
        else f"incremental ({result.pages_reclaimed} free pages reclaimed)"
    )
    change = f"freed {delta} bytes" if delta >= 0 else f"grew by {-delta} bytes"
    ctx.out.line(f"{kind}: {before} -> {after} bytes, {change}")
    return 0

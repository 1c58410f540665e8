"""``vacuum``: return free pages of a LOCAL database file to the OS (never via a broker)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from mqlite.cli.args import output_flag
from mqlite.cli.context import Context, Failure
from mqlite.cli.output import size_text
from mqlite.errors import InvalidArgument


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
    # Imported here: the engine costs a client-mode command (and `mqlite --help`) about
    # 0.2 s of CPU at start for nothing; only local commands need it.
    from mqlite.sdk.embedded import database_path

    try:
        path = database_path(target.dsn, command)
    except InvalidArgument as exc:
        raise Failure(str(exc)) from None
    if path is None:
        raise Failure(f"{command} needs a database file, not {target.dsn!r}")
    return path


def vacuum(ctx: Context) -> int:
    """The footprint is measured with the WAL checkpointed away before and after, so the
    figures agree with each other: zero pages reclaimed is zero bytes freed."""
    path = local_path(ctx, "vacuum")
    if not os.path.exists(path):
        raise Failure(f"no database at {path}")
    result = ctx.embedded.vacuum(full=ctx.args.full)  # the writer lock: refused beside a broker
    before, after = result.before_bytes, result.after_bytes
    delta = before - after
    pages = None if result.full else result.pages_reclaimed
    if ctx.out.json:
        report: dict[str, object] = {
            "mode": "full" if result.full else "incremental",
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

"""``backup PATH`` and ``restore SNAPSHOT --data-dir DIR`` for a LOCAL database file.

The work is the engine's (``mqlite.engine.backup`` through ``mqlite.sdk.embedded``): a
consistent snapshot on a separate read-only connection, so it works while a broker owns
the database, verified and checksummed; restore verifies and copies into an empty
directory. This module only renders progress and the report.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from mqlite import errors
from mqlite.cli.args import output_flag
from mqlite.cli.commands.local import local_path
from mqlite.cli.context import Context, Failure, UsageError
from mqlite.cli.output import Progress


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("backup", help="online consistent snapshot of the local database")
    p.add_argument("path", help="snapshot file to create (plus PATH.sha256)")
    p.add_argument("--force", action="store_true", help="replace an existing PATH")
    output_flag(p)
    p.set_defaults(handler=backup)

    p = sub.add_parser(
        "restore", help="restore a snapshot, or the S3 replica (--from), into an empty dir"
    )
    p.add_argument("snapshot", nargs="?", help="a snapshot made by `mqlite backup`")
    p.add_argument(
        "--from",
        dest="replica",
        metavar="S3_URL",
        help="the Litestream replica s3://bucket/path (endpoint, region and credentials "
        "from MQLITE_REPLICA_*, as for the broker; docs/replication.md)",
    )
    p.add_argument("--data-dir", required=True, help="empty (or new) directory for mq.db")
    output_flag(p)
    p.set_defaults(handler=restore)


def backup(ctx: Context) -> int:
    source = local_path(ctx, "backup")
    bar: Progress | None = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = Progress("backup", total // 1024, " KiB")
        bar.update(done // 1024)

    from mqlite.sdk.embedded import take_snapshot  # local-only: see local_path

    try:
        snap = take_snapshot(source, ctx.args.path, force=ctx.args.force, progress=progress)
    except errors.BackupFailed as exc:
        raise Failure(exc.message) from None
    finally:
        if bar is not None:
            bar.finish()
    facts = snap.facts
    if ctx.out.json:
        ctx.out.obj(
            {
                "path": snap.path,
                "bytes": snap.bytes,
                "sha256": snap.sha256,
                "integrity": "ok",
                **facts.as_dict(),
            }
        )
    else:
        ctx.out.line(
            f"backup {snap.path}: {snap.bytes} bytes, schema {facts.schema_version}, "
            f"integrity ok, {facts.queues} queue(s), {facts.messages} message(s)"
        )
        ctx.out.line(f"sha256 {snap.sha256} -> {snap.path}.sha256")
    return 0


def restore(ctx: Context) -> int:
    if (ctx.args.snapshot is None) == (ctx.args.replica is None):
        raise UsageError("give a SNAPSHOT or --from s3://bucket/path (one of them)")
    if ctx.args.replica is not None:
        from mqlite.cli.replicate import restore_replica
        from mqlite.config import process_environ

        target = restore_replica(process_environ(), ctx.args.replica, ctx.args.data_dir)
        if ctx.out.json:
            ctx.out.obj({"path": target, "from": ctx.args.replica, "integrity": "ok"})
        else:
            ctx.out.line(f"restored {ctx.args.replica} -> {target}: integrity ok")
            ctx.out.line(f"start it with MQLITE_DB=file:{target}")
        return 0
    from mqlite.sdk.embedded import restore_snapshot  # local-only: see local_path

    try:
        target, digest, facts = restore_snapshot(ctx.args.snapshot, ctx.args.data_dir)
    except errors.BackupFailed as exc:
        raise Failure(exc.message) from None
    if ctx.out.json:
        ctx.out.obj({"path": target, "sha256": digest, **facts.as_dict()})
        return 0
    snapshot = os.path.abspath(ctx.args.snapshot)
    states = ", ".join(f"{k}={v}" for k, v in facts.by_state.items()) or "none"
    ctx.out.line(f"restored {snapshot} -> {target} (schema {facts.schema_version})")
    ctx.out.line(
        f"{facts.queues} queue(s), {facts.subscriptions} subscription(s), "
        f"{facts.access_keys} access key(s), {facts.messages} message(s): {states}"
    )
    ctx.out.line(f"start it with MQLITE_DB=file:{target}; review access keys before traffic")
    return 0

"""``backup PATH`` and ``restore SNAPSHOT --data-dir DIR`` for a LOCAL database file.

backup: a separate READ-ONLY sqlite3 connection (``mode=ro``; never mqlite's engine, so it
works while a broker owns the database) runs ``VACUUM INTO`` a temp file beside PATH: one
read transaction, hence a transactionally consistent snapshot. The snapshot must pass
``integrity_check`` / ``foreign_key_check`` and carry a schema version; it is fsynced,
atomically renamed to PATH, and ``PATH.sha256`` is written in ``sha256sum`` format.

restore: verify the checksum, integrity and schema version (this binary's), refuse a
non-empty directory, copy into ``DIR/mq.db`` through a temp file and an atomic rename.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import secrets
import shutil
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mqlite.cli.args import output_flag
from mqlite.cli.commands.local import local_path
from mqlite.cli.context import Context, Failure
from mqlite.cli.output import Progress
from mqlite.sdk.embedded import SCHEMA_VERSION  # the schema token this binary reads

BUSY_TIMEOUT_MS = 10_000


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("backup", help="online consistent snapshot of the local database")
    p.add_argument("path", help="snapshot file to create (plus PATH.sha256)")
    p.add_argument("--force", action="store_true", help="replace an existing PATH")
    output_flag(p)
    p.set_defaults(handler=backup)

    p = sub.add_parser("restore", help="verify a snapshot and restore it into an empty dir")
    p.add_argument("snapshot")
    p.add_argument("--data-dir", required=True, help="empty (or new) directory for mq.db")
    output_flag(p)
    p.set_defaults(handler=restore)


def _ro(path: str, *, immutable: bool = False) -> sqlite3.Connection:
    uri = f"file:{quote(path)}?mode=ro" + ("&immutable=1" if immutable else "")
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def verify(path: str) -> dict[str, Any]:
    """integrity_check, foreign_key_check, schema version and counts of a static file."""
    try:
        conn = _ro(path, immutable=True)
        try:
            check = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
            if check != ["ok"]:
                raise Failure(f"{path}: integrity_check failed: {'; '.join(check[:3])}")
            if conn.execute("PRAGMA foreign_key_check").fetchall():
                raise Failure(f"{path}: foreign_key_check found dangling rows")
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            states = dict(
                conn.execute("SELECT state, count(*) FROM messages GROUP BY state").fetchall()
            )
            queues = conn.execute("SELECT count(*) FROM queues WHERE kind = 'queue'").fetchone()
            subs = conn.execute("SELECT count(*) FROM subscriptions").fetchone()
            keys = conn.execute("SELECT count(*) FROM access_keys").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise Failure(f"{path}: not a readable mqlite database ({exc})") from None
    if row is None:
        raise Failure(f"{path}: no schema_version in meta (not an mqlite database)")
    return {
        "schema_version": str(row[0]),
        "queues": int(queues[0]),
        "subscriptions": int(subs[0]),
        "access_keys": int(keys[0]),
        "messages": sum(states.values()),
        "by_state": {str(k): int(v) for k, v in sorted(states.items())},
    }


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _fsync(path: str, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp-{secrets.token_hex(4)}"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def backup(ctx: Context) -> int:
    source = local_path(ctx, "backup")
    if not os.path.exists(source):
        raise Failure(f"no database at {source}")
    dest = os.path.abspath(ctx.args.path)
    if os.path.exists(dest) and not ctx.args.force:
        raise Failure(f"{dest} exists: choose a new filename (or pass --force)")
    directory = os.path.dirname(dest)
    tmp = os.path.join(directory, f".{os.path.basename(dest)}.tmp-{secrets.token_hex(6)}")
    try:
        _snapshot(source, tmp)
        facts = verify(tmp)
        _fsync(tmp)
        os.replace(tmp, dest)
        _fsync(directory, directory=True)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    digest = sha256_file(dest)
    _write_atomic(dest + ".sha256", f"{digest}  {os.path.basename(dest)}\n".encode())
    _fsync(directory, directory=True)
    size = os.path.getsize(dest)
    if ctx.out.json:
        ctx.out.obj({"path": dest, "bytes": size, "sha256": digest, "integrity": "ok", **facts})
    else:
        ctx.out.line(
            f"backup {dest}: {size} bytes, schema {facts['schema_version']}, integrity ok, "
            f"{facts['queues']} queue(s), {facts['messages']} message(s)"
        )
        ctx.out.line(f"sha256 {digest} -> {dest}.sha256")
    return 0


def _snapshot(source: str, tmp: str) -> None:
    try:
        conn = _ro(source)
    except sqlite3.Error as exc:
        raise Failure(f"cannot open {source} read-only: {exc}") from None
    try:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        bar = Progress("backup", int(pages * page_size) // 1024, " KiB")
        if bar.enabled:

            def tick() -> int:
                with contextlib.suppress(OSError):
                    bar.update(os.path.getsize(tmp) // 1024)
                return 0

            conn.set_progress_handler(tick, 20_000)
        try:
            conn.execute("VACUUM INTO ?", (tmp,))
        finally:
            bar.update(bar.total)
            bar.finish()
    except sqlite3.Error as exc:
        raise Failure(f"snapshot of {source} failed: {exc}") from None
    finally:
        conn.close()


def _expected_digest(snapshot: str) -> str:
    sidecar = snapshot + ".sha256"
    try:
        text = Path(sidecar).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise Failure(f"cannot read checksum {sidecar}: {exc.strerror or exc}") from None
    digest = text.split()[0].lower() if text else ""
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise Failure(f"{sidecar} does not hold a sha256 digest")
    return digest


def restore(ctx: Context) -> int:
    snapshot = os.path.abspath(ctx.args.snapshot)
    if not os.path.isfile(snapshot):
        raise Failure(f"no snapshot at {snapshot}")
    expected = _expected_digest(snapshot)
    if sha256_file(snapshot) != expected:
        raise Failure(f"{snapshot}: sha256 does not match {snapshot}.sha256 (corrupt copy?)")
    facts = verify(snapshot)
    if facts["schema_version"] != SCHEMA_VERSION:
        raise Failure(
            f"{snapshot}: schema version {facts['schema_version']!r}, this mqlite reads "
            f"{SCHEMA_VERSION!r} (restore it with the matching binary)"
        )
    data_dir = os.path.abspath(ctx.args.data_dir)
    if os.path.exists(data_dir) and (not os.path.isdir(data_dir) or os.listdir(data_dir)):
        raise Failure(f"{data_dir} is not an empty directory: restore only into a fresh one")
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    target = os.path.join(data_dir, "mq.db")
    tmp = os.path.join(data_dir, f".mq.db.restore-{secrets.token_hex(6)}")
    try:
        with open(snapshot, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
            dst.flush()
            os.fsync(dst.fileno())
        if sha256_file(tmp) != expected:
            raise Failure(f"the copy in {data_dir} does not match the snapshot's sha256")
        os.replace(tmp, target)
        _fsync(data_dir, directory=True)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    if ctx.out.json:
        ctx.out.obj({"path": target, "sha256": expected, **facts})
        return 0
    states = ", ".join(f"{k}={v}" for k, v in facts["by_state"].items()) or "none"
    ctx.out.line(f"restored {snapshot} -> {target} (schema {facts['schema_version']})")
    ctx.out.line(
        f"{facts['queues']} queue(s), {facts['subscriptions']} subscription(s), "
        f"{facts['access_keys']} access key(s), {facts['messages']} message(s): {states}"
    )
    ctx.out.line(f"start it with MQLITE_DB=file:{target}; review access keys before traffic")
    return 0

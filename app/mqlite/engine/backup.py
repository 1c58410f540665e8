"""Online snapshots, their verification, and restore into a fresh directory.

A snapshot is ``VACUUM INTO`` run on a separate READ-ONLY connection (``mode=ro``): one
read transaction in WAL mode, so it is transactionally consistent and works beside the
process that owns the database (a running broker) without taking its writer. The copy is
verified (``integrity_check``, ``foreign_key_check``, a schema token), fsynced, atomically
renamed into place, and described by a ``sha256sum``-format sidecar. Restore verifies the
checksum, integrity and schema token and copies into an EMPTY directory (an old WAL or SHM
beside the copy would otherwise attach to it), through a temp file and an atomic rename.

A snapshot is written to a temp file in the destination's directory, named
``.mqlite-backup-<name>.<random>.tmp`` and held under an exclusive ``flock`` while it is
written. A backup killed mid-copy (SIGKILL, OOM, power) cannot unlink it, so every backup
first sweeps its directory: a temp file (and its SQLite ``-journal``) that no live backup
holds locked is removed. So an interrupted backup costs disk only until the next one runs
(the appliance's timer runs one daily into the same directory).

Nothing here ever writes to the source, and a destination that IS the source or one of its
sidecars (by path or by inode) is refused: overwriting the live file or its WAL destroys
acknowledged messages.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import quote

from mqlite import errors
from mqlite.engine import migrations
from mqlite.engine.store import SCHEMA_VERSION

BUSY_TIMEOUT_MS = 10_000
SIDECARS = ("", "-wal", "-shm", "-journal", ".lock")

INTEGRITY_CHECK_SQL = "PRAGMA integrity_check"
FOREIGN_KEY_CHECK_SQL = "PRAGMA foreign_key_check"
SNAPSHOT_SCHEMA_SQL = "SELECT value FROM meta WHERE key = 'schema_version'"
SNAPSHOT_STATES_SQL = "SELECT state, count(*) FROM messages GROUP BY state"
SNAPSHOT_COUNTS_SQL = """
SELECT (SELECT count(*) FROM queues WHERE kind = 'queue'),
       (SELECT count(*) FROM subscriptions),
       (SELECT count(*) FROM access_keys)
"""
PAGE_BYTES_SQL = "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
VACUUM_INTO_SQL = "VACUUM INTO ?"
TEMP_PREFIX = ".mqlite-backup-"
TEMP_SUFFIX = ".tmp"
JOURNAL = "-journal"  # what SQLite may leave beside a VACUUM INTO target it was writing

Progress = Callable[[int, int], None]  # (bytes copied so far, bytes expected)


BackupError = errors.BackupFailed


@dataclass(frozen=True, slots=True)
class DatabaseFacts:
    """What a verified database file holds (no names, no bodies)."""

    schema_version: str
    queues: int
    subscriptions: int
    access_keys: int
    messages: int
    by_state: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Snapshot:
    path: str
    bytes: int
    sha256: str
    facts: DatabaseFacts


def _connect_ro(path: str, *, immutable: bool = False) -> sqlite3.Connection:
    uri = f"file:{quote(path)}?mode=ro" + ("&immutable=1" if immutable else "")
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def verify(path: str) -> DatabaseFacts:
    """integrity_check, foreign_key_check, schema token and counts of a static file."""
    try:
        conn = _connect_ro(path, immutable=True)
        try:
            check = [r[0] for r in conn.execute(INTEGRITY_CHECK_SQL).fetchall()]
            if check != ["ok"]:
                raise BackupError(f"{path}: integrity_check failed: {'; '.join(check[:3])}")
            if conn.execute(FOREIGN_KEY_CHECK_SQL).fetchall():
                raise BackupError(f"{path}: foreign_key_check found dangling rows")
            row = conn.execute(SNAPSHOT_SCHEMA_SQL).fetchone()
            states = dict(conn.execute(SNAPSHOT_STATES_SQL).fetchall())
            queues, subs, keys = conn.execute(SNAPSHOT_COUNTS_SQL).fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise BackupError(f"{path}: not a readable mqlite database ({exc})") from None
    if row is None:
        raise BackupError(f"{path}: no schema_version in meta (not an mqlite database)")
    return DatabaseFacts(
        schema_version=str(row[0]),
        queues=int(queues),
        subscriptions=int(subs),
        access_keys=int(keys),
        messages=sum(states.values()),
        by_state={str(k): int(v) for k, v in sorted(states.items())},
    )


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def refuse_overwriting_the_source(source: str, dest: str) -> None:
    """A destination that is the database or one of its sidecars, by path or by inode
    (a hard link, another spelling), would destroy acknowledged data."""
    real_dest = os.path.realpath(dest)
    try:
        dest_stat: os.stat_result | None = os.stat(real_dest)
    except OSError:
        dest_stat = None
    for suffix in SIDECARS:
        candidate = os.path.realpath(source + suffix)
        same = candidate == real_dest
        if not same and dest_stat is not None:
            with contextlib.suppress(OSError):
                same = os.path.samestat(os.stat(candidate), dest_stat)
        if same:
            what = f"its {suffix.lstrip('-.')} file" if suffix else "the database itself"
            raise BackupError(
                f"refusing to write the backup onto {what} ({real_dest}); choose a new path"
            )


def snapshot(
    source: str, dest: str, *, force: bool = False, progress: Progress | None = None
) -> Snapshot:
    """Take a verified, checksummed snapshot of the database file ``source`` at ``dest``."""
    if not os.path.exists(source):
        raise BackupError(f"no database at {source}")
    dest = os.path.abspath(dest)
    refuse_overwriting_the_source(source, dest)
    if os.path.exists(dest) and not force:
        raise BackupError(f"{dest} exists: choose a new filename (or pass --force)")
    directory = os.path.dirname(dest)
    if not os.path.isdir(directory):
        raise BackupError(f"directory {directory} does not exist")
    sweep_abandoned(directory)
    held = claim_temp(directory, dest)
    tmp = held.path
    try:
        _vacuum_into(source, tmp, progress)
        facts = verify(tmp)
        _fsync(tmp)
        os.replace(tmp, dest)
        _fsync(directory, directory=True)
    finally:
        for leftover in (tmp, tmp + JOURNAL):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)
        held.release()
    digest = sha256_file(dest)
    _write_atomic(dest + ".sha256", f"{digest}  {os.path.basename(dest)}\n".encode())
    _fsync(directory, directory=True)
    return Snapshot(dest, os.path.getsize(dest), digest, facts)


@dataclass(slots=True)
class HeldTemp:
    """A backup's temp file, locked (``flock``) by this process until ``release``."""

    path: str
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # drops the flock
            self.fd = -1


def claim_temp(directory: str, dest: str) -> HeldTemp:
    """A new, empty temp file for ``dest`` in ``directory`` (VACUUM INTO accepts an empty
    target), locked before it gets the name a sweep looks for: it is created under a
    name no sweep touches, locked, then renamed (the lock stays with the open file)."""
    token = secrets.token_hex(6)
    claim = os.path.join(directory, f".mqlite-claim-{token}")
    path = os.path.join(directory, f"{TEMP_PREFIX}{os.path.basename(dest)}.{token}{TEMP_SUFFIX}")
    fd = os.open(claim, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(claim, path)
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(claim)
        raise
    return HeldTemp(path, fd)


def sweep_abandoned(directory: str) -> list[str]:
    """Remove the temp files of interrupted backups in ``directory``: those no live
    backup holds locked (with their ``-journal``); the paths removed."""
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in sorted(names):
        if not (name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX)):
            continue
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a live backup is writing it
        try:
            for leftover in (path, path + JOURNAL):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)
            removed.append(path)
        finally:
            os.close(fd)
    return removed


def _vacuum_into(source: str, tmp: str, progress: Progress | None) -> None:
    try:
        conn = _connect_ro(source)
    except sqlite3.Error as exc:
        raise BackupError(f"cannot open {source} read-only: {exc}") from None
    try:
        expected = int(conn.execute(PAGE_BYTES_SQL).fetchone()[0])
        if progress is not None:

            def tick() -> int:
                with contextlib.suppress(OSError):
                    progress(os.path.getsize(tmp), expected)
                return 0

            conn.set_progress_handler(tick, 20_000)
        conn.execute(VACUUM_INTO_SQL, (tmp,))
        if progress is not None:
            progress(expected, expected)
    except sqlite3.Error as exc:
        raise BackupError(f"snapshot of {source} failed: {exc}") from None
    finally:
        conn.close()


def expected_digest(snapshot_path: str) -> str:
    sidecar = snapshot_path + ".sha256"
    try:
        text = Path(sidecar).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise BackupError(f"cannot read checksum {sidecar}: {exc.strerror or exc}") from None
    digest = text.split()[0].lower() if text else ""
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise BackupError(f"{sidecar} does not hold a sha256 digest")
    return digest


def restore(snapshot_path: str, data_dir: str) -> tuple[str, str, DatabaseFacts]:
    """Verify ``snapshot_path`` and copy it to ``data_dir/mq.db``; (target, sha256, facts)."""
    snapshot_path = os.path.abspath(snapshot_path)
    if not os.path.isfile(snapshot_path):
        raise BackupError(f"no snapshot at {snapshot_path}")
    expected = expected_digest(snapshot_path)
    if sha256_file(snapshot_path) != expected:
        raise BackupError(
            f"{snapshot_path}: sha256 does not match {snapshot_path}.sha256 (corrupt copy?)"
        )
    facts = verify(snapshot_path)
    try:  # this binary's token, or one it migrates from when the restored file is opened
        migrations.plan(facts.schema_version, SCHEMA_VERSION)
    except errors.SchemaVersionMismatch:
        raise BackupError(
            f"{snapshot_path}: schema version {facts.schema_version}, this mqlite reads "
            f"{SCHEMA_VERSION} and migrates from {', '.join(sorted(migrations.STEPS, key=int))} "
            "(restore it with the matching binary)"
        ) from None
    data_dir = os.path.abspath(data_dir)
    if os.path.exists(data_dir) and (not os.path.isdir(data_dir) or os.listdir(data_dir)):
        raise BackupError(f"{data_dir} is not an empty directory: restore only into a fresh one")
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    target = os.path.join(data_dir, "mq.db")
    tmp = os.path.join(data_dir, f".mq.db.restore-{secrets.token_hex(6)}")
    try:
        with open(snapshot_path, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
            dst.flush()
            os.fsync(dst.fileno())
        if sha256_file(tmp) != expected:
            raise BackupError(f"the copy in {data_dir} does not match the snapshot's sha256")
        os.replace(tmp, target)
        _fsync(data_dir, directory=True)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target, expected, facts


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

"""deploy/systemd/mqlite-backup against a real database with the real mqlite CLI: every
snapshot verified and checksummed, only the newest N kept, nothing pruned on failure.
(tests/appliance/test_unit_in_systemd.py runs the same script from its timer's unit.)"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from packaging_support import REPO, VENV_BIN, run

SCRIPT = REPO / "deploy" / "systemd" / "mqlite-backup"
MQLITE = VENV_BIN / "mqlite"


def _env(db: Path, backups: Path, keep: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env.update(
        MQLITE_DB=f"file:{db}",
        MQLITE_BACKUP_DIR=str(backups),
        MQLITE_BACKUP_KEEP=keep,
        MQLITE_BIN=str(MQLITE),
        MQLITE_ENDPOINT="http://127.0.0.1:9",  # must be ignored: backup is local-only
    )
    return env


def _database(tmp_path: Path) -> Path:
    db = tmp_path / "live" / "mq.db"
    db.parent.mkdir()
    env = {"MQLITE_DB": f"file:{db}", "PATH": os.environ["PATH"]}
    for cmd in (["create-queue", "orders"], ["send", "orders", "order-1"]):
        subprocess.run([MQLITE, *cmd], env=env, check=True, capture_output=True)
    return db


def test_keeps_the_newest_n_verified_snapshots(tmp_path: Path) -> None:
    db, backups = _database(tmp_path), tmp_path / "backups"
    made = []
    for _ in range(4):
        r = run("sh", SCRIPT, env=_env(db, backups, "2"))
        assert r.returncode == 0, r.stderr
        made.append(r.stdout.split()[1].rstrip(":"))
    snapshots = sorted(p.name for p in backups.glob("mq-*.db"))
    assert snapshots == sorted(Path(m).name for m in made[-2:])
    for name in snapshots:
        digest = (backups / f"{name}.sha256").read_text().split()[0]
        assert digest == hashlib.sha256((backups / name).read_bytes()).hexdigest()
        restored = tmp_path / f"restore-{name}"
        r = run(MQLITE, "restore", backups / name, "--data-dir", restored)
        assert r.returncode == 0 and "1 message(s)" in r.stdout, r.stdout + r.stderr
    assert not list(backups.glob(".*tmp*"))  # no leftovers


def test_a_failed_backup_prunes_nothing(tmp_path: Path) -> None:
    db, backups = _database(tmp_path), tmp_path / "backups"
    for _ in range(2):
        assert run("sh", SCRIPT, env=_env(db, backups, "1")).returncode == 0
    before = sorted(backups.iterdir())
    r = run("sh", SCRIPT, env=_env(tmp_path / "missing.db", backups, "1"))
    assert r.returncode == 1 and "no database" in r.stderr
    assert sorted(backups.iterdir()) == before


def test_keep_must_be_a_positive_integer(tmp_path: Path) -> None:
    for bad in ("0", "-1", "seven", "3x"):
        r = run("sh", SCRIPT, env=_env(tmp_path / "mq.db", tmp_path / "b", bad))
        assert r.returncode == 2 and "MQLITE_BACKUP_KEEP" in r.stderr, bad

"""The private diagnostic log file (observability, "Private diagnostic log"): JSON lines,
mode 0600, appended across restarts, rotated into three archives, newest first; a path
that cannot be used is refused before startup, naming the variable."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import pytest

from mqlite import errors
from mqlite.engine import diagnostics
from mqlite.server import diagnostic_log
from mqlite.server.diagnostic_log import DiagnosticLog


def _emit(n: int, tag: str) -> None:
    for i in range(n):
        diagnostics.emit("storage.failure", f"{tag} {i}", logging.ERROR, operation="read")


def test_lines_mode_append_and_rotation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logging.getLogger("mqlite").setLevel(logging.INFO)
    path = tmp_path / "diag.jsonl"
    log = DiagnosticLog.attach(str(path))
    _emit(2, "first")
    log.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["msg"] for x in lines] == ["first 0", "first 1"]
    assert {x["event"] for x in lines} == {"storage.failure"} and lines[0]["operation"] == "read"
    log = DiagnosticLog.attach(str(path))  # a restart appends
    _emit(1, "second")
    log.close()
    assert len(path.read_text().splitlines()) == 3
    monkeypatch.setattr(diagnostic_log, "ROTATE_BYTES", 600)  # a few lines per file
    log = DiagnosticLog.attach(str(path))
    _emit(40, "many")
    log.close()
    archives = sorted(p.name for p in tmp_path.iterdir())
    assert archives == ["diag.jsonl", "diag.jsonl.1", "diag.jsonl.2", "diag.jsonl.3"]
    newest = json.loads(path.read_text().splitlines()[-1])["msg"]
    older = json.loads((tmp_path / "diag.jsonl.1").read_text().splitlines()[-1])["msg"]
    assert newest == "many 39" and int(older.split()[1]) < 39
    for p in tmp_path.iterdir():
        assert p.stat().st_size <= 600 and stat.S_IMODE(p.stat().st_mode) == 0o600


def test_an_unusable_path_is_refused_naming_the_variable(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidArgument, match="MQLITE_DIAGNOSTIC_LOG"):
        diagnostic_log.check(str(tmp_path / "no-such-dir" / "d.jsonl"))
    (tmp_path / "dir").mkdir()
    with pytest.raises(errors.InvalidArgument, match="MQLITE_DIAGNOSTIC_LOG"):
        diagnostic_log.check(str(tmp_path / "dir"))  # a directory, not a file
    diagnostic_log.check(str(tmp_path / "ok.jsonl"))

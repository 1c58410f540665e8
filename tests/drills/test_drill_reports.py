"""A drill's report is a file an operator can attach to a change request: when it ran,
the broker version, the host and every parameter, written whatever the verdict, its path
printed on stderr (so ``make drill-*`` shows it and ``--json`` keeps stdout one object)."""

from __future__ import annotations

import json
import socket
from datetime import datetime
from pathlib import Path

import drillkit
import pytest

from mqlite.clock import SystemClock
from mqlite.version import VERSION


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], ok: bool) -> dict[str, object]:
    args = drillkit.arguments("restore", "").parse_args(
        ["--quick", "--seed", "7", "--report-dir", str(tmp_path / "reports")]
    )
    assert drillkit.run_drill("restore", lambda r, a: r.check("the check", ok), args) == (not ok)
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "drill report:" in x]
    path = Path(line.split("drill report: ", 1)[1])
    assert path.parent == tmp_path / "reports" and path.name.startswith("restore-")
    report: dict[str, object] = json.loads(path.read_text())
    return report


def test_the_report_file_carries_time_version_host_and_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _run(tmp_path, capsys, ok=True)
    assert report["result"] == "PASS" and report["broker_version"] == VERSION
    started = datetime.fromisoformat(str(report["started_at"]))
    assert started.tzinfo is not None
    assert 0 <= SystemClock().now_ms() / 1000 - started.timestamp() < 60
    host = report["host"]
    assert isinstance(host, dict) and host["name"] == socket.gethostname() and host["platform"]
    params = report["parameters"]
    assert isinstance(params, dict) and params["seed"] == 7 and params["quick"] is True
    assert report["checks"] == [{"name": "the check", "ok": True, "detail": ""}]


def test_a_failed_drill_writes_its_report_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, capsys, ok=False)["result"] == "FAIL"

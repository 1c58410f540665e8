"""The drills against the real container (issue 13: "the drills also run against the
container"): ``ops/drills/* --image`` with the image this tier built, run as an operator
runs them, must report PASS with the broker being that image as its non-root user.

restore: the restored snapshot is served by a container of the image (and so is the
source the snapshot was taken from under HTTP writers). crash, HTTP phase only
(``--cycles 0``): the service is a container SIGKILLed by ``podman kill``, killed at a
kill point inside it, and SIGKILLed from the host as its main process so that its
restart policy brings it back; no acknowledged send lost, none stored twice.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from appliance_support import REPO, podman_env

DRILLS = REPO / "ops" / "drills"


def drill(name: str, *args: str) -> tuple[int, dict[str, Any], str]:
    """(exit status, the JSON report, the progress lines), podman on this machine's conf."""
    done = subprocess.run(
        [sys.executable, str(DRILLS / name), "--json", "--quick", *args],
        env=podman_env(),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def failed(report: dict[str, Any]) -> list[str]:
    return [c["name"] for c in report.get("checks", []) if not c["ok"]]


def test_restore_drill_passes_with_the_snapshot_served_by_the_container(image: str) -> None:
    status, report, progress = drill("restore", "--image", image)
    assert status == 0 and report["result"] == "PASS", failed(report) or progress[-3000:]
    served = report["figures"]["restored_broker"]
    assert served.startswith("container ") and f"of {image}," in served, served
    assert served.endswith("main process uid 10001"), served  # the image's user, not root
    names = {c["name"] for c in report["checks"]}
    assert "canary send / receive / complete on the restored broker" in names
    assert "orphaned locks recovered: to active below the bound, to the DLQ at it" in names
    assert report["figures"]["rpo_acknowledged_writes_not_in_snapshot"] >= 0


def test_crash_drill_http_phase_passes_against_the_container(image: str) -> None:
    status, report, progress = drill("crash", "--cycles", "0", "--seed", "13", "--image", image)
    assert status == 0 and report["result"] == "PASS", failed(report) or progress[-3000:]
    assert f"of {image}," in report["figures"]["http_broker"]
    assert report["figures"]["http_sends_acknowledged"] > 0
    for cycle in ("kill point", "SIGKILL of the service", "restarted by its policy"):
        assert cycle in progress, (cycle, progress[-2000:])
    assert {c["name"] for c in report["checks"]} >= {
        "HTTP: every acknowledged send survives",
        "HTTP: no message stored twice",
        "HTTP kill points fired",
    }

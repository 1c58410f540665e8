"""`podman-compose up` of the REAL compose.yaml (broker + Prometheus + Alertmanager; Grafana
stays behind its profile): Prometheus scrapes the broker with the monitor token from the
file secret, a wrong token is refused, and Alertmanager is up and reachable from Prometheus.

The observability files compose.yaml mounts (ops/prometheus, ops/alertmanager) are
replaced by the test-only ones in tests/appliance/compose/, copied to the same paths.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from appliance_support import PREFIX, REPO, Rpc, free_port, podman_env, wait_for

HERE = Path(__file__).parent / "compose"
COMPOSE = [sys.executable, "-m", "podman_compose"]


@pytest.fixture
def stack(image: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    project = tmp_path / "project"
    (project / "ops" / "prometheus").mkdir(parents=True)
    (project / "ops" / "alertmanager").mkdir(parents=True)
    shutil.copy(REPO / "compose.yaml", project)
    shutil.copy(HERE / "prometheus.yml", project / "ops" / "prometheus" / "prometheus.yml")
    shutil.copy(HERE / "rules.yml", project / "ops" / "prometheus" / "rules.yml")
    shutil.copy(HERE / "alertmanager.yml", project / "ops" / "alertmanager" / "alertmanager.yml")
    subprocess.run(["sh", str(REPO / "deploy" / "compose-secrets.sh"), "./secrets"],
                   cwd=project, check=True, capture_output=True)  # fmt: skip
    ports = {"MQLITE_PORT": free_port(), "PROMETHEUS_PORT": free_port(),
             "ALERTMANAGER_PORT": free_port()}  # fmt: skip
    env = dict(podman_env(), MQLITE_IMAGE=image, **{k: str(v) for k, v in ports.items()})
    name = f"{PREFIX}-stack"
    base = [*COMPOSE, "-p", name, "-f", str(project / "compose.yaml")]

    def compose(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*base, *args], cwd=project, env=env, capture_output=True, text=True, timeout=300
        )

    up = compose("up", "-d")
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        yield {"project": project, "ports": ports, "compose": compose}
    finally:
        compose("down", "-v", "-t", "5")


def _targets(prom: str) -> dict[str, dict[str, Any]]:
    active = httpx.get(f"{prom}/api/v1/targets", timeout=3).json()["data"]["activeTargets"]
    return {t["labels"]["job"]: t for t in active}


def test_prometheus_scrapes_the_broker_with_the_monitor_token(stack: dict[str, Any]) -> None:
    ports, project = stack["ports"], stack["project"]
    prom = f"http://127.0.0.1:{ports['PROMETHEUS_PORT']}"
    broker = f"http://127.0.0.1:{ports['MQLITE_PORT']}"
    wait_for("broker /healthz", lambda: httpx.get(f"{broker}/healthz", timeout=2).text == "ok")
    admin = (project / "secrets" / "mqlite-admin.token").read_text().strip()
    rpc = Rpc(broker, admin)  # the admin token came from the file secret, not the logs
    rpc.create_queue("compose")
    rpc.close()

    wait_for("the scrape target up", lambda: _targets(prom)["mqlite"]["health"] == "up", 90)
    wrong = wait_for(
        "the wrong-token target down",
        lambda: (t := _targets(prom)["mqlite-wrong-token"])["health"] == "down" and t,
    )
    assert "401" in wrong["lastError"], wrong
    q = httpx.get(f"{prom}/api/v1/query", params={"query": 'up{job="mqlite"}'}).json()
    assert [r["value"][1] for r in q["data"]["result"]] == ["1"]

    am = f"http://127.0.0.1:{ports['ALERTMANAGER_PORT']}"
    wait_for("Alertmanager ready", lambda: httpx.get(f"{am}/-/ready", timeout=2).is_success)
    active = wait_for(
        "Prometheus to discover Alertmanager",
        lambda: httpx.get(f"{prom}/api/v1/alertmanagers").json()["data"]["activeAlertmanagers"],
    )
    assert [a["url"] for a in active] == ["http://alertmanager:9093/api/v2/alerts"]
    # Grafana is behind the `ui` profile: not started by a plain `up`.
    ps = stack["compose"]("ps", "--format", "{{.Names}}").stdout
    assert "grafana" not in ps and "broker" in ps, ps

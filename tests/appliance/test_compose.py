"""`podman-compose up` of the REAL compose.yaml (broker + Prometheus + Alertmanager; Grafana
stays behind its profile) with the REAL observability files it mounts:
ops/prometheus/prometheus.compose.yml, ops/prometheus/rules.yml and
ops/alertmanager/alertmanager.yml. Derived for the test only, the way tests/ops derives
them: 1 s intervals, every ``for:`` cut to 1 s, a second scrape job with a wrong token,
and ``--rules.alert.resend-delay=1s`` on Prometheus. Prometheus scrapes the broker with the
monitor token from the file secret, a wrong token is refused, and a dead letter's alert
reaches Alertmanager (polled through its API, never slept for).
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from appliance_support import (
    PREFIX,
    REPO,
    Rpc,
    compose_project,
    free_port,
    inspect,
    podman_env,
    wait_for,
)

OPS = REPO / "ops"
WRONG_TOKEN = "mqk_not_the_monitor_token"
DLQ_ALERT = "MQLiteDeadLettersRetained"


def derived_prometheus() -> dict[str, Any]:
    cfg = yaml.safe_load((OPS / "prometheus" / "prometheus.compose.yml").read_text())
    cfg["global"].update(scrape_interval="1s", evaluation_interval="1s", scrape_timeout="1s")
    (job,) = cfg["scrape_configs"]
    job.update(scrape_interval="1s", scrape_timeout="1s")
    wrong = copy.deepcopy(job)
    wrong["job_name"] = "mqlite-wrong-token"  # the negative control: down with a 401
    wrong["authorization"] = {"type": "Bearer", "credentials": WRONG_TOKEN}
    cfg["scrape_configs"].append(wrong)
    return cfg


def derived_rules() -> dict[str, Any]:
    rules = yaml.safe_load((OPS / "prometheus" / "rules.yml").read_text())
    for group in rules["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "1s"
    return rules


def derived_compose() -> dict[str, Any]:
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    compose["services"]["prometheus"]["command"].append("--rules.alert.resend-delay=1s")
    return compose


@pytest.fixture
def stack(image: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    project = tmp_path / "project"
    (project / "ops" / "prometheus").mkdir(parents=True)
    (project / "ops" / "alertmanager").mkdir(parents=True)
    (project / "compose.yaml").write_text(yaml.safe_dump(derived_compose(), sort_keys=False))
    prom_dir = project / "ops" / "prometheus"
    (prom_dir / "prometheus.compose.yml").write_text(yaml.safe_dump(derived_prometheus()))
    (prom_dir / "rules.yml").write_text(yaml.safe_dump(derived_rules(), sort_keys=False))
    shutil.copy(OPS / "alertmanager" / "alertmanager.yml", project / "ops" / "alertmanager")
    subprocess.run(["sh", str(REPO / "deploy" / "compose-secrets.sh"), "./secrets"],
                   cwd=project, check=True, capture_output=True)  # fmt: skip
    ports = {"MQLITE_PORT": free_port(), "PROMETHEUS_PORT": free_port(),
             "ALERTMANAGER_PORT": free_port()}  # fmt: skip
    env = dict(podman_env(), MQLITE_IMAGE=image, **{k: str(v) for k, v in ports.items()})
    name = f"{PREFIX}-stack"
    compose = compose_project(project, "compose.yaml", name, env)

    up = compose("up", "-d")
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        yield {"project": project, "ports": ports, "compose": compose}
    finally:
        compose("down", "-v", "-t", "5")


def _targets(prom: str) -> dict[str, dict[str, Any]]:
    active = httpx.get(f"{prom}/api/v1/targets", timeout=3).json()["data"]["activeTargets"]
    return {t["labels"]["job"]: t for t in active}


def _target_health(prom: str, job: str, health: str) -> dict[str, Any]:
    """The job's target once its health is ``health``; else an AssertionError that says
    what Prometheus sees (no such job yet, or the target's lastError, e.g. "no such
    host" when the compose network has no DNS), for wait_for's timeout message."""
    targets = _targets(prom)
    assert job in targets, f"no {job!r} target yet (jobs: {sorted(targets)})"
    t = targets[job]
    assert t["health"] == health, f"{job} is {t['health']}: {t['lastError']!r}"
    return t


def _alerts(am: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = httpx.get(f"{am}/api/v2/alerts", timeout=3).json()
    return found


def test_the_real_files_scrape_and_alert(stack: dict[str, Any], network_dns: str) -> None:
    ports, project = stack["ports"], stack["project"]
    prom = f"http://127.0.0.1:{ports['PROMETHEUS_PORT']}"
    broker = f"http://127.0.0.1:{ports['MQLITE_PORT']}"
    am = f"http://127.0.0.1:{ports['ALERTMANAGER_PORT']}"
    wait_for("broker /healthz", lambda: httpx.get(f"{broker}/healthz", timeout=2).text == "ok")
    admin = (project / "secrets" / "mqlite-admin.token").read_text().strip()
    rpc = Rpc(broker, admin)  # the admin token came from the file secret, not the logs
    rpc.create_queue("compose")
    rpc.send("compose", "poison")
    (m,) = rpc.call("QueueService/Receive", {"queue": "compose"})["messages"]
    rpc.call(
        "QueueService/Reject",
        {"queue": "compose", "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
    )
    rpc.close()

    wait_for("the scrape target up", lambda: _target_health(prom, "mqlite", "up"), 90)
    wrong = wait_for(
        "the wrong-token target down",
        lambda: _target_health(prom, "mqlite-wrong-token", "down"),
    )
    assert "401" in wrong["lastError"], wrong
    q = httpx.get(f"{prom}/api/v1/query", params={"query": 'up{job="mqlite"}'}).json()
    assert [r["value"][1] for r in q["data"]["result"]] == ["1"]

    wait_for("Alertmanager ready", lambda: httpx.get(f"{am}/-/ready", timeout=2).is_success)
    active = wait_for(
        "Prometheus to discover Alertmanager",
        lambda: httpx.get(f"{prom}/api/v1/alertmanagers").json()["data"]["activeAlertmanagers"],
    )
    assert [a["url"] for a in active] == ["http://alertmanager:9093/api/v2/alerts"]
    alert = wait_for(
        "the dead-letter alert in Alertmanager",
        lambda: [a for a in _alerts(am) if a["labels"]["alertname"] == DLQ_ALERT],
        60,
    )
    assert alert[0]["labels"]["queue"] == "compose" and alert[0]["labels"]["job"] == "mqlite"
    assert alert[0]["annotations"]["runbook_url"] == (
        "https://github.com/mqlitehq/mqlite-py/blob/main/docs/operations.md#mqlitedeadlettersretained"
    )
    # Grafana is behind the `ui` profile: not started by a plain `up`.
    ps = stack["compose"]("ps", "--format", "{{.Names}}").stdout
    assert "grafana" not in ps and "broker" in ps, ps
    # The logs are capped (compose.yaml's x-logging; podman keeps the size, not max-file).
    log = inspect(f"{PREFIX}-stack_broker_1")["HostConfig"]["LogConfig"]
    assert log["Type"] == "json-file" and log["Size"] == "10MB", log

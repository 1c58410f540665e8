"""ops/alertmanager/alertmanager.yml: amtool accepts it and rejects a broken copy; the
routes send each severity of the rules to the intended receiver (amtool's own router)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ops_support import ALERTMANAGER_CONFIG, RULES, fails, load_yaml, ok, run, tool
from promstack import alertmanager_config


def routed_to(config: Path, **labels: str) -> str:
    r = run(
        [
            tool("amtool"),
            "config",
            "routes",
            "test",
            f"--config.file={config}",
            *(f"{k}={v}" for k, v in labels.items()),
        ]
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.strip()


def test_config_is_valid(debian_tools: dict[str, str]) -> None:
    out = ok([tool("amtool"), "check-config", str(ALERTMANAGER_CONFIG)])
    assert "SUCCESS" in out, out


def test_a_broken_config_is_rejected(tmp_path: Path, debian_tools: dict[str, str]) -> None:
    broken = tmp_path / "alertmanager.yml"
    broken.write_text(
        ALERTMANAGER_CONFIG.read_text().replace("receiver: mqlite-pager", "receiver: mqlite-pagr")
    )
    out = fails([tool("amtool"), "check-config", str(broken)])
    assert "mqlite-pagr" in out, out


@pytest.mark.parametrize(
    ("severity", "receiver"), [("critical", "mqlite-pager"), ("warning", "mqlite-team")]
)
def test_routes_by_severity(severity: str, receiver: str, debian_tools: dict[str, str]) -> None:
    assert routed_to(ALERTMANAGER_CONFIG, alertname="MQLiteX", severity=severity) == receiver


def test_every_rule_severity_has_a_route(debian_tools: dict[str, str]) -> None:
    severities = {r["labels"]["severity"] for g in load_yaml(RULES)["groups"] for r in g["rules"]}
    receivers = {routed_to(ALERTMANAGER_CONFIG, severity=s) for s in severities}
    assert receivers == {"mqlite-pager", "mqlite-team"}


def test_inhibitions_name_existing_alerts() -> None:
    names = {r["alert"] for g in load_yaml(RULES)["groups"] for r in g["rules"]}
    for rule in load_yaml(ALERTMANAGER_CONFIG)["inhibit_rules"]:
        for matcher in rule["source_matchers"] + rule["target_matchers"]:
            label, _, value = matcher.partition("=")
            if label == "alertname":
                for name in value.lstrip("~").strip('"').split("|"):
                    assert name in names, matcher


def test_stack_copy_is_valid_and_fast(tmp_path: Path, debian_tools: dict[str, str]) -> None:
    import yaml

    cfg = alertmanager_config("http://127.0.0.1:9")
    assert cfg["route"]["group_wait"] == cfg["route"]["group_interval"] == "1s"
    urls = [h["url"] for r in cfg["receivers"] for h in r["webhook_configs"]]
    assert urls == ["http://127.0.0.1:9/mqlite/team", "http://127.0.0.1:9/mqlite/pager"]
    path = tmp_path / "am.yml"
    path.write_text(yaml.safe_dump(cfg))
    ok([tool("amtool"), "check-config", str(path)])

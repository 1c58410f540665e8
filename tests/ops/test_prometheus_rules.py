"""ops/prometheus: promtool check config / check rules / test rules on the files as shipped,
each next to a deliberately broken copy that the same check must reject; every alert's
metadata, runbook anchor and metric contract; the short-``for:`` copy the real stack uses."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from ops_support import (
    OPERATIONS_DOC,
    PROM_CONFIG,
    RULES,
    RULES_TEST,
    contract_violations,
    fails,
    github_anchor,
    load_yaml,
    ok,
    parse_promql,
    section_headings,
    tool,
)
from promstack import prometheus_config, short_for_rules

RUNBOOK_SECTION = "Alert runbooks"
# Where the docs are published (the image's org.opencontainers.image.documentation base).
RUNBOOK_BASE = "https://github.com/mqlitehq/mqlite-py/blob/main/docs/operations.md"
SEVERITIES = {"critical", "warning"}


def alerts() -> list[dict[str, Any]]:
    return [r for g in load_yaml(RULES)["groups"] for r in g["rules"] if "alert" in r]


@pytest.fixture
def prom_dir(tmp_path: Path, debian_tools: dict[str, str]) -> Path:
    """ops/prometheus copied unchanged, plus the monitor token file the config names."""
    d = tmp_path / "prometheus"
    d.mkdir()
    for f in (PROM_CONFIG, RULES, RULES_TEST):
        shutil.copy(f, d / f.name)
    cfg = load_yaml(PROM_CONFIG)
    (job,) = cfg["scrape_configs"]
    (d / job["authorization"]["credentials_file"]).write_text("mqk_monitor_example\n")
    return d


# -- promtool -------------------------------------------------------------------------------


def test_config_is_valid_and_its_token_file_is_checked(prom_dir: Path) -> None:
    out = ok([tool("promtool"), "check", "config", "prometheus.yml"], cwd=prom_dir)
    assert "SUCCESS" in out and f"{len(alerts())} rules found" in out, out
    (prom_dir / "mqlite-monitor.token").unlink()
    out = fails([tool("promtool"), "check", "config", "prometheus.yml"], cwd=prom_dir)
    assert "mqlite-monitor.token" in out, out


def test_scrape_job_contract() -> None:
    cfg = load_yaml(PROM_CONFIG)
    (job,) = cfg["scrape_configs"]
    assert job["job_name"] == "mqlite"
    assert job["metrics_path"] == "/metrics"
    assert job["scrape_interval"] == "15s"
    assert job["authorization"]["type"] == "Bearer"
    assert "credentials" not in job["authorization"]  # a file, never an inline secret
    assert cfg["rule_files"] == ["rules.yml"]
    assert cfg["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]


def test_rules_are_valid_and_a_broken_rule_is_rejected(prom_dir: Path) -> None:
    out = ok([tool("promtool"), "check", "rules", "rules.yml"], cwd=prom_dir)
    assert f"SUCCESS: {len(alerts())} rules found" in out, out
    text = (prom_dir / "rules.yml").read_text()
    broken = text.replace('up{job="mqlite"} == 0', 'up{job="mqlite" == 0', 1)
    assert broken != text
    (prom_dir / "rules.yml").write_text(broken)
    out = fails([tool("promtool"), "check", "rules", "rules.yml"], cwd=prom_dir)
    assert "MQLiteScrapeDown" in out or "parse error" in out, out


def test_rule_unit_tests_pass(prom_dir: Path) -> None:
    out = ok([tool("promtool"), "test", "rules", "rules_test.yml"], cwd=prom_dir)
    assert "SUCCESS" in out, out


@pytest.mark.parametrize(
    ("original", "mutant"),
    [
        # a weaker threshold: the firing case must notice
        (
            'mqlite_queue_messages{job="mqlite", state="dead_lettered"} > 0',
            'mqlite_queue_messages{job="mqlite", state="dead_lettered"} > 5',
        ),
        # a wrong label value: fires on nothing
        ('outcome="outcome_unknown"', 'outcome="unknown"'),
        # a lost guard: the restart case must notice
        ('and on (job, instance) (time() - mqlite_start_time_seconds{job="mqlite"} > 900)', ""),
    ],
    ids=["threshold", "label-value", "guard"],
)
def test_rule_unit_tests_catch_a_changed_rule(prom_dir: Path, original: str, mutant: str) -> None:
    text = (prom_dir / "rules.yml").read_text()
    assert original in text
    (prom_dir / "rules.yml").write_text(text.replace(original, mutant, 1))
    ok([tool("promtool"), "check", "rules", "rules.yml"], cwd=prom_dir)  # still valid PromQL
    out = fails([tool("promtool"), "test", "rules", "rules_test.yml"], cwd=prom_dir)
    assert "FAILED" in out, out


def test_every_alert_has_firing_and_silent_unit_cases() -> None:
    fired: set[str] = set()
    silent: set[str] = set()
    for case in load_yaml(RULES_TEST)["tests"]:
        for check in case.get("alert_rule_test", []):
            (fired if check.get("exp_alerts") else silent).add(check["alertname"])
    names = {a["alert"] for a in alerts()}
    assert names - fired == set(), "alerts without a firing case"
    assert names - silent == set(), "alerts without a not-firing case"
    assert (fired | silent) - names == set(), "cases for alerts that do not exist"


# -- alert metadata -------------------------------------------------------------------------


def test_alert_metadata() -> None:
    seen = set()
    for a in alerts():
        name = a["alert"]
        assert re.fullmatch(r"MQLite[A-Z][A-Za-z]+", name), name
        assert name not in seen, f"duplicate alert {name}"
        seen.add(name)
        assert a["labels"]["severity"] in SEVERITIES, name
        ann = a["annotations"]
        assert set(ann) == {"summary", "description", "runbook_url"}, name
        assert "{{ $labels.instance }}" in ann["summary"], name
        assert ann["runbook_url"] == f"{RUNBOOK_BASE}#{github_anchor(name)}", name


def test_every_alert_has_its_runbook_and_every_runbook_an_alert() -> None:
    """Each runbook_url, as the rendered alert shows it, is an absolute link into the
    published docs/operations.md (a relative path resolves nowhere in a pager or a chat
    message) whose fragment is a heading of the runbook section."""
    runbooks = section_headings(OPERATIONS_DOC.read_text(), RUNBOOK_SECTION)
    anchors = {github_anchor(h) for h in runbooks}
    for a in alerts():
        page, fragment = a["annotations"]["runbook_url"].split("#", 1)
        assert page == RUNBOOK_BASE, a["alert"]
        assert page.endswith(f"/{OPERATIONS_DOC.relative_to(OPERATIONS_DOC.parents[1])}")
        assert fragment in anchors, f"{a['alert']}: no '### ' heading for #{fragment}"
    assert sorted(runbooks) == sorted(a["alert"] for a in alerts())


def test_rules_use_only_the_metric_contract() -> None:
    exprs = [(a["alert"], a["expr"]) for a in alerts()]
    parsed = parse_promql([e for _, e in exprs])
    problems = [
        p for (w, e), x in zip(exprs, parsed, strict=True) for p in contract_violations(w, e, x)
    ]
    assert problems == []
    for (name, _), p in zip(exprs, parsed, strict=True):  # every selector is scoped to the job
        for sel in p.selectors:
            assert any(m.label == "job" and m.value == "mqlite" for m in sel.matchers), (name, sel)


@pytest.mark.parametrize(
    ("expr", "problem"),
    [
        ('mqlite_queue_mesages{job="mqlite"} > 0', "not in ops/metric-contract.json"),
        ('mqlite_queue_total{job="mqlite"} > 0', "deprecated alias"),
        (
            'mqlite_queue_messages{job="mqlite", state="dead_letterd"} > 0',
            "'dead_letterd' is not one of",
        ),
        (
            'mqlite_storage_operations_total{job="mqlite", outcome=~"error|unknown"} > 0',
            "'unknown' is not one of",
        ),
        ('mqlite_filter_failures_total{job="mqlite", queue="x"} > 0', "has no label 'queue'"),
        ('sum by (queue) (mqlite_authentication_total{job="mqlite"}) > 0', "groups by 'queue'"),
    ],
)
def test_contract_check_rejects(expr: str, problem: str) -> None:
    (parsed,) = parse_promql([expr])
    problems = contract_violations("test", expr, parsed)
    assert any(problem in p for p in problems), problems


# -- the copy the real stack loads ----------------------------------------------------------


def test_short_for_copy_differs_only_in_timing(
    tmp_path: Path, debian_tools: dict[str, str]
) -> None:
    short = short_for_rules()
    original = load_yaml(RULES)
    for g_short, g in zip(short["groups"], original["groups"], strict=True):
        for r_short, r in zip(g_short["rules"], g["rules"], strict=True):
            assert r_short.get("for") == ("1s" if "for" in r else None)
            assert {k: v for k, v in r_short.items() if k != "for"} == {
                k: v for k, v in r.items() if k != "for"
            }
    path = tmp_path / "short.yml"
    path.write_text(yaml.safe_dump(short))
    ok([tool("promtool"), "check", "rules", str(path)])


def test_stack_config_is_valid(tmp_path: Path, debian_tools: dict[str, str]) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump(short_for_rules()))
    tokens = {n: tmp_path / f"{n}.token" for n in ("mqlite", "wrong")}
    for p in tokens.values():
        p.write_text("t\n")
    cfg = prometheus_config(
        target="127.0.0.1:1",
        token_file=tokens["mqlite"],
        rule_file=rules,
        alertmanager="127.0.0.1:2",
        extra_jobs={"mqlite-wrong": tokens["wrong"]},
    )
    assert [j["job_name"] for j in cfg["scrape_configs"]] == ["mqlite", "mqlite-wrong"]
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(cfg))
    ok([tool("promtool"), "check", "config", str(path)])

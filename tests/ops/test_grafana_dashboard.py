"""ops/grafana: the dashboard type-checked against Grafana's own TypeScript types
(@grafana/schema), its structure, its PromQL (parsed by promtool, checked against the metric
contract), the "No data is never a green zero" rules and the provisioning files. Every check
also runs on a deliberately broken copy that it must reject."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from ops_support import (
    DASHBOARD,
    DASHBOARD_PROVIDERS,
    DATASOURCES,
    contract_violations,
    dashboard_panels,
    dashboard_queries,
    expand_grafana_variables,
    load_yaml,
    parse_promql,
    recording_rules,
    run,
    tool,
    typecheck_dashboard,
)

GRID_COLUMNS = 24
VALUE_PANELS = {"stat", "bargauge", "gauge", "table"}  # show one current value per series
ZERO_FALLBACK = re.compile(
    r"\bor\s+(on\s*\([^)]*\)\s*)?vector\s*\(|\bvector\s*\(\s*0\s*\)|absent\s*\("
)


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def provisioned_uid() -> str:
    (ds,) = load_yaml(DATASOURCES)["datasources"]
    return str(ds["uid"])


# -- structure ------------------------------------------------------------------------------


def structure_problems(dash: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for key in ("uid", "title", "schemaVersion"):
        if not dash.get(key):
            problems.append(f"dashboard has no {key}")
    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    ds_var = variables.get("datasource")
    if not ds_var or ds_var.get("type") != "datasource" or ds_var.get("query") != "prometheus":
        problems.append("no 'datasource' variable of Prometheus datasources")
    elif ds_var.get("current", {}).get("value") != provisioned_uid():
        problems.append(
            f"datasource variable defaults to {ds_var.get('current')}, not {provisioned_uid()}"
        )
    for name in ("instance", "queue"):
        if name not in variables:
            problems.append(f"no {name} variable")
    allowed_ds = {"${datasource}", provisioned_uid()}
    ids: set[int] = set()
    cells: dict[tuple[int, int], int] = {}
    for p in dashboard_panels(dash):
        pid = p.get("id")
        if not isinstance(pid, int) or pid in ids:
            problems.append(f"panel {p.get('title')!r}: id {pid!r} missing or not unique")
        ids.add(pid)
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in ("x", "y", "w", "h")):
            problems.append(f"panel {pid}: incomplete gridPos {g}")
            continue
        if g["x"] < 0 or g["w"] <= 0 or g["x"] + g["w"] > GRID_COLUMNS:
            problems.append(f"panel {pid}: gridPos x={g['x']} w={g['w']} leaves the 24 columns")
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    problems.append(f"panel {pid} overlaps panel {cells[(x, y)]} at x={x} y={y}")
                    break
                cells[(x, y)] = pid
        if p["type"] == "row":
            continue
        refs = [p.get("datasource", {})] + [t.get("datasource", {}) for t in p.get("targets", [])]
        for ref in refs:
            if ref.get("type") != "prometheus" or ref.get("uid") not in allowed_ds:
                problems.append(f"panel {pid}: datasource {ref} is not the provisioned Prometheus")
        if not p.get("targets"):
            problems.append(f"panel {pid}: no queries")
        if not p.get("title") or not p.get("description"):
            problems.append(f"panel {pid}: needs a title and a description")
    return problems


def no_data_problems(dash: dict[str, Any]) -> list[str]:
    """'No data' must never look like a healthy zero."""
    problems: list[str] = []
    for where, expr in dashboard_queries(dash):
        if ZERO_FALLBACK.search(expr):
            problems.append(f"{where}: a missing series is replaced by a value: {expr}")
    for p in dashboard_panels(dash):
        if p["type"] == "row":
            continue
        defaults = p.get("fieldConfig", {}).get("defaults", {})
        no_value = defaults.get("noValue")
        if not isinstance(no_value, str) or not re.search(r"[A-Za-z]", no_value):
            problems.append(
                f"panel {p['id']}: noValue must be a text such as 'No data', not {no_value!r}"
            )
        for m in defaults.get("mappings", []):
            if m.get("type") == "special":
                result = m["options"]["result"]
                if (
                    re.fullmatch(r"\s*0*\s*", result.get("text", "0"))
                    or result.get("color") == "green"
                ):
                    problems.append(f"panel {p['id']}: null/NaN mapped to a healthy-looking value")
        if p["type"] in VALUE_PANELS:
            for t in p.get("targets", []):
                if not t.get("instant") or t.get("range"):
                    problems.append(
                        f"panel {p['id']}: {p['type']} target {t['refId']} must be instant "
                        "(a range query would show the last value from before a failure)"
                    )
        if defaults.get("custom", {}).get("spanNulls") not in (None, False):
            problems.append(f"panel {p['id']}: spanNulls bridges gaps in the data")
    return problems


def test_structure() -> None:
    assert structure_problems(dashboard()) == []


def test_no_data_is_never_a_green_zero() -> None:
    assert no_data_problems(dashboard()) == []


def test_required_sections_are_present() -> None:
    text = json.dumps(dashboard())
    needed = {
        "traffic": "mqlite_message_events_total",
        "backlog": "mqlite_queue_messages",
        "oldest age": "mqlite_queue_oldest_message_age_seconds",
        "dead letters": 'state=\\"dead_lettered\\"',
        "request results": "mqlite_rpc_requests_total",
        "latency quantiles": "histogram_quantile(0.95, sum by (le) "
        "(rate(mqlite_rpc_duration_seconds_bucket",
        "auth outcomes": "mqlite_authentication_total",
        "storage operations": "mqlite_storage_operations_total",
        "read probe": "mqlite_storage_read_available",
        "storage size": "mqlite_storage_size_bytes",
        "maintenance": "mqlite_maintenance_runs_total",
        "active alerts": "ALERTS{",
    }
    missing = [k for k, v in needed.items() if v not in text]
    assert missing == []


def test_structural_checks_reject_a_broken_copy() -> None:
    bad = copy.deepcopy(dashboard())
    panels = [p for p in dashboard_panels(bad) if p["type"] != "row"]
    panels[1]["id"] = panels[0]["id"]
    panels[2]["gridPos"]["x"] = 22  # w=3: columns 22..24
    panels[3]["datasource"] = {"type": "prometheus", "uid": "some-other-uid"}
    bad["templating"]["list"][0]["current"]["value"] = "elsewhere"
    problems = "\n".join(structure_problems(bad))
    for expected in (
        "not unique",
        "leaves the 24 columns",
        "overlaps",
        "some-other-uid",
        "elsewhere",
    ):
        assert expected in problems, (expected, problems)


def test_no_data_checks_reject_a_broken_copy() -> None:
    bad = copy.deepcopy(dashboard())
    stat = next(p for p in dashboard_panels(bad) if p["type"] == "stat")
    stat["targets"][0]["expr"] += " or vector(0)"
    stat["targets"][0].update(instant=False, range=True)
    del stat["fieldConfig"]["defaults"]["noValue"]
    problems = "\n".join(no_data_problems(bad))
    for expected in ("replaced by a value", "noValue must be a text", "must be instant"):
        assert expected in problems, (expected, problems)


# -- Grafana's types ------------------------------------------------------------------------


def test_matches_grafana_types(tmp_path: Path) -> None:
    r = typecheck_dashboard(dashboard(), tmp_path / "ts")
    assert r.returncode == 0, r.stdout + r.stderr


def test_grafana_types_reject_a_broken_copy(tmp_path: Path) -> None:
    bad = copy.deepcopy(dashboard())
    bad["graphTooltip"] = 7
    panels = list(dashboard_panels(bad))
    stat = next(p for p in panels if p["type"] == "stat")
    series = next(p for p in panels if p["type"] == "timeseries")
    stat["gridPoss"] = stat.pop("gridPos")
    stat["options"]["colorMode"] = "rainbow"
    series["fieldConfig"]["defaults"]["custom"]["drawStyle"] = "dots"
    series["targets"][0]["exprr"] = series["targets"][0].pop("expr")
    r = typecheck_dashboard(bad, tmp_path / "ts")
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    for expected in ("'7' is not assignable", '"gridPoss"', '"rainbow"', '"dots"', '"exprr"'):
        assert expected in out, (expected, out)


# -- PromQL ---------------------------------------------------------------------------------


def promtool_problems(dash: dict[str, Any], tmp_path: Path) -> str:
    text, _ = recording_rules(dashboard_queries(dash))
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(text)
    r = run([tool("promtool"), "check", "rules", str(path)])
    return "" if r.returncode == 0 else r.stdout + r.stderr


def test_every_query_parses(tmp_path: Path, debian_tools: dict[str, str]) -> None:
    assert promtool_problems(dashboard(), tmp_path) == ""


def test_promtool_rejects_a_broken_query(tmp_path: Path, debian_tools: dict[str, str]) -> None:
    bad = copy.deepcopy(dashboard())
    panel = next(p for p in dashboard_panels(bad) if p["type"] == "timeseries")
    panel["targets"][0]["expr"] = "sum by (queue (rate(mqlite_message_events_total[5m]))"
    out = promtool_problems(bad, tmp_path)
    assert f"panel_{panel['id']}_" in out, out  # the record name says which panel


def test_queries_use_only_the_metric_contract() -> None:
    queries = dashboard_queries(dashboard())
    parsed = parse_promql([expand_grafana_variables(e) for _, e in queries])
    problems = [
        p for (w, e), x in zip(queries, parsed, strict=True) for p in contract_violations(w, e, x)
    ]
    assert problems == []
    for (where, _), p in zip(queries, parsed, strict=True):
        for sel in p.selectors:
            labels = {m.label for m in sel.matchers}
            assert "job" in labels, f"{where}: {sel.metric} is not scoped to job=mqlite"
            if not where.startswith("variable"):
                assert "instance" in labels, f"{where}: {sel.metric} ignores the instance variable"


def test_contract_check_rejects_a_broken_copy() -> None:
    bad = copy.deepcopy(dashboard())
    panel = next(p for p in dashboard_panels(bad) if p["type"] == "timeseries")
    panel["targets"][0]["expr"] = 'sum(mqlite_queue_total{job="mqlite", instance=~"$instance"})'
    queries = dashboard_queries(bad)
    parsed = parse_promql([expand_grafana_variables(e) for _, e in queries])
    problems = [
        p for (w, e), x in zip(queries, parsed, strict=True) for p in contract_violations(w, e, x)
    ]
    assert any(f"panel {panel['id']}" in p and "deprecated alias" in p for p in problems), problems


# -- provisioning ---------------------------------------------------------------------------


def test_datasource_provisioning() -> None:
    cfg = load_yaml(DATASOURCES)
    assert cfg["apiVersion"] == 1
    (ds,) = cfg["datasources"]
    assert ds["type"] == "prometheus" and ds["access"] == "proxy"
    assert ds["url"].startswith("http")
    assert (
        ds["jsonData"]["timeInterval"]
        == load_yaml(DATASOURCES.parents[3] / "prometheus" / "prometheus.yml")["global"][
            "scrape_interval"
        ]
    )
    assert "secureJsonData" not in ds  # Grafana needs no broker token


def test_dashboard_provisioning() -> None:
    cfg = load_yaml(DASHBOARD_PROVIDERS)
    assert cfg["apiVersion"] == 1
    (provider,) = cfg["providers"]
    assert provider["type"] == "file"
    assert Path(provider["options"]["path"]).is_absolute()
    assert provider["allowUiUpdates"] is False  # the file in the repository stays the truth


@pytest.mark.parametrize("name", ["instance", "queue"])
def test_variables_select_all_by_default(name: str) -> None:
    (var,) = [v for v in dashboard()["templating"]["list"] if v["name"] == name]
    assert var["type"] == "query" and var["multi"] and var["includeAll"]
    assert var["datasource"]["uid"] == "${datasource}"

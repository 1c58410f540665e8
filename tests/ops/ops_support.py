"""Shared machinery of the ops tests: where the artifacts live, the metric contract, the
external tools (installed when missing, never skipped) and PromQL inspection.

* Debian's ``prometheus``/``promtool``/``prometheus-alertmanager``/``amtool`` come from
  ``ops/ci/install-deps.sh`` (``make test`` runs it; ``ensure_debian_tools`` runs it again
  when a test is started on its own).
* npm's ``typescript`` + ``@grafana/schema`` (the dashboard type check) and
  ``@prometheus-io/lezer-promql`` (Prometheus's own PromQL grammar, used to list the metric
  selectors of every expression) are installed by ``npm_toolchain`` into a cache directory
  keyed by their pinned versions: ``$MQLITE_TEST_CACHE`` or ``~/.cache/mqlite-tests``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
OPS = REPO / "ops"
CONTRACT_PATH = OPS / "metric-contract.json"
PROM_DIR = OPS / "prometheus"
PROM_CONFIG = PROM_DIR / "prometheus.yml"
RULES = PROM_DIR / "rules.yml"
RULES_TEST = PROM_DIR / "rules_test.yml"
ALERTMANAGER_CONFIG = OPS / "alertmanager" / "alertmanager.yml"
DASHBOARD = OPS / "grafana" / "dashboards" / "mqlite.json"
DATASOURCES = OPS / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
DASHBOARD_PROVIDERS = OPS / "grafana" / "provisioning" / "dashboards" / "mqlite.yml"
INSTALL_DEPS = OPS / "ci" / "install-deps.sh"
OPERATIONS_DOC = REPO / "docs" / "operations.md"
OBSERVABILITY_DOC = REPO / "docs" / "observability.md"

DEBIAN_TOOLS = ("prometheus", "promtool", "prometheus-alertmanager", "amtool")
NPM_PACKAGES = {
    "typescript": "7.0.2",
    "@grafana/schema": "13.2.3",
    "@prometheus-io/lezer-promql": "0.315.0",
}
TOOL_TIMEOUT_S = 120


# -- processes ------------------------------------------------------------------------------


def run(
    cmd: list[str],
    *,
    cwd: Path | None = None,
    timeout: float = TOOL_TIMEOUT_S,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )


def ok(cmd: list[str], **kw: Any) -> str:
    """Run and require exit 0; stdout + stderr (promtool reports on either)."""
    r = run(cmd, **kw)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"{cmd} -> {r.returncode}\n{out}"
    return out


def fails(cmd: list[str], **kw: Any) -> str:
    """Run and require a non-zero exit; stdout + stderr."""
    r = run(cmd, **kw)
    out = r.stdout + r.stderr
    assert r.returncode != 0, f"{cmd} unexpectedly succeeded\n{out}"
    return out


@cache
def ensure_debian_tools() -> dict[str, str]:
    """The Debian binaries, installed by ops/ci/install-deps.sh if any is missing."""
    if any(shutil.which(t) is None for t in DEBIAN_TOOLS):
        r = run(["bash", str(INSTALL_DEPS)], timeout=900)
        if r.returncode != 0:
            pytest.fail(f"ops/ci/install-deps.sh failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    found = {t: shutil.which(t) for t in DEBIAN_TOOLS}
    missing = [t for t, p in found.items() if p is None]
    if missing:
        pytest.fail(f"still missing after ops/ci/install-deps.sh: {missing}")
    return {t: str(p) for t, p in found.items()}


def tool(name: str) -> str:
    return ensure_debian_tools()[name]


# -- npm toolchain --------------------------------------------------------------------------


def cache_root() -> Path:
    env = os.environ.get("MQLITE_TEST_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mqlite-tests"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@cache
def npm_toolchain() -> Path:
    """A directory whose node_modules holds the pinned NPM_PACKAGES (installed once)."""
    key = hashlib.sha256(json.dumps(NPM_PACKAGES, sort_keys=True).encode()).hexdigest()[:12]
    root = cache_root()
    target = root / f"npm-ops-{key}"
    done = target / ".installed"
    with _locked(root / f"npm-ops-{key}.lock"):
        if not done.exists():
            npm = shutil.which("npm")
            if npm is None:
                pytest.fail("npm is not installed (the machine's Node.js provides it)")
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            pkg = {"name": "mqlite-ops-checks", "private": True, "dependencies": NPM_PACKAGES}
            (target / "package.json").write_text(json.dumps(pkg, indent=2))
            r = run(
                [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                cwd=target,
                timeout=600,
            )
            if r.returncode != 0:
                pytest.fail(f"npm install failed ({r.returncode}):\n{r.stdout}{r.stderr}")
            done.write_text(json.dumps(NPM_PACKAGES))
    return target


# -- the metric contract --------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    name: str
    type: str
    labels: dict[str, list[str] | None]
    extra_labels: bool = False  # ALERTS carries every label of its alert


@cache
def contract() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CONTRACT_PATH.read_text())
    return data


def _families(section: str) -> dict[str, Family]:
    return {
        name: Family(name, spec["type"], dict(spec["labels"]), bool(spec.get("extra_labels")))
        for name, spec in contract()[section].items()
        if not name.startswith("_")
    }


@cache
def canonical_families() -> dict[str, Family]:
    return _families("families")


@cache
def deprecated_families() -> dict[str, Family]:
    return _families("deprecated_aliases")


@cache
def series_names() -> dict[str, Family]:
    """Every sample name rules and panels may select: canonical families (a histogram as
    its _bucket/_count/_sum series) and the series Prometheus makes itself."""
    out: dict[str, Family] = {}
    for fam in [*canonical_families().values(), *_families("prometheus_series").values()]:
        if fam.type == "histogram":
            out[fam.name + "_bucket"] = Family(
                fam.name + "_bucket", "histogram", {**fam.labels, "le": None}
            )
            out[fam.name + "_count"] = Family(fam.name + "_count", "histogram", fam.labels)
            out[fam.name + "_sum"] = Family(fam.name + "_sum", "histogram", fam.labels)
        else:
            out[fam.name] = fam
    return out


def target_labels() -> list[str]:
    return list(contract()["target_labels"])


# -- PromQL inspection ----------------------------------------------------------------------

SELECTORS_JS = Path(__file__).with_name("promql_selectors.mjs")


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str
    value: str


@dataclass(frozen=True)
class Selector:
    metric: str | None
    matchers: tuple[Matcher, ...]


@dataclass(frozen=True)
class Parsed:
    selectors: tuple[Selector, ...]
    grouping: tuple[str, ...]
    errors: tuple[int, ...]


def parse_promql(exprs: list[str]) -> list[Parsed]:
    """Selectors and grouping labels of each expression, from Prometheus's lezer grammar."""
    root = npm_toolchain()
    script = root / SELECTORS_JS.name  # beside node_modules, so the import resolves
    if not script.exists() or script.read_text() != SELECTORS_JS.read_text():
        shutil.copy(SELECTORS_JS, script)
    node = shutil.which("node") or sys.exit("node missing")
    r = run([node, str(script)], cwd=root, stdin=json.dumps(exprs))
    assert r.returncode == 0, r.stderr
    out = []
    for item in json.loads(r.stdout):
        sels = tuple(
            Selector(s["metric"], tuple(Matcher(**m) for m in s["matchers"]))
            for s in item["selectors"]
        )
        out.append(Parsed(sels, tuple(item["grouping"]), tuple(item["errors"])))
    return out


_PLAIN_ALTERNATION = re.compile(r"^[A-Za-z0-9_]+(\|[A-Za-z0-9_]+)*$")


def contract_violations(where: str, expr: str, parsed: Parsed) -> list[str]:
    """Why ``expr`` steps outside the contract: unknown or deprecated series, unknown label
    names, values outside a closed vocabulary, grouping by labels no selected series has."""
    problems: list[str] = []
    names = series_names()
    deprecated = deprecated_families()
    if parsed.errors:
        problems.append(f"{where}: PromQL syntax error at offset {parsed.errors[0]}: {expr}")
    if not parsed.selectors:
        problems.append(f"{where}: selects no series: {expr}")
    known_labels = set(target_labels()) | {"__name__"}
    extra = False
    for sel in parsed.selectors:
        if sel.metric is None:
            problems.append(f"{where}: selector without a metric name in {expr}")
            continue
        if sel.metric in deprecated:
            problems.append(f"{where}: deprecated alias {sel.metric} (use the canonical family)")
            continue
        fam = names.get(sel.metric)
        if fam is None:
            problems.append(f"{where}: {sel.metric} is not in ops/metric-contract.json")
            continue
        known_labels |= set(fam.labels)
        extra = extra or fam.extra_labels
        for m in sel.matchers:
            if m.label in ("__name__", *target_labels()):
                continue
            if m.label not in fam.labels:
                if not fam.extra_labels:
                    problems.append(f"{where}: {sel.metric} has no label {m.label!r}")
                continue
            vocab = fam.labels[m.label]
            if vocab is None or "$" in m.value:
                continue
            if m.op in ("=", "!="):
                values = [m.value]
            elif _PLAIN_ALTERNATION.match(m.value):
                values = m.value.split("|")
            else:
                continue
            for v in values:
                if v not in vocab:
                    problems.append(
                        f"{where}: {sel.metric}{{{m.label}{m.op}...}}: {v!r} is not one of {vocab}"
                    )
    if not extra:
        for label in parsed.grouping:
            if label not in known_labels:
                problems.append(f"{where}: groups by {label!r}, which no selected series has")
    return problems


# -- Grafana --------------------------------------------------------------------------------

GRAFANA_VARIABLE = re.compile(r"\$\{?(__[a-z_]+|[A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}?")
_DURATION_VARS = {"__rate_interval", "__interval", "__range", "__range_s"}


def expand_grafana_variables(expr: str) -> str:
    """A Grafana query made plain PromQL: interval variables become 5m, template variables
    (used inside =~ matchers) match anything."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in _DURATION_VARS:
            return "5m"
        return ".*"

    return GRAFANA_VARIABLE.sub(sub, expr)


_LABEL_VALUES = re.compile(
    r"^label_values\((?P<selector>.+),\s*(?P<label>[A-Za-z_][A-Za-z0-9_]*)\)$"
)


def dashboard_panels(dash: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, rows and the panels inside collapsed rows included."""
    for p in dash.get("panels", []):
        yield p
        yield from p.get("panels", [])


def dashboard_queries(dash: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and of every query variable (its selector)."""
    out: list[tuple[str, str]] = []
    for p in dashboard_panels(dash):
        for t in p.get("targets", []):
            if "expr" in t:
                out.append((f"panel {p['id']} {p.get('title')!r} target {t['refId']}", t["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = _LABEL_VALUES.match(q)
        assert m, f"variable {v['name']}: only label_values(selector, label) is supported: {q}"
        out.append((f"variable {v['name']}", m.group("selector")))
    return out


def recording_rules(queries: Iterable[tuple[str, str]]) -> tuple[str, list[str]]:
    """A rules file recording each query (promtool parses each one) and the record names
    in order, which name the query in promtool's messages."""
    rules, names = [], []
    for i, (where, expr) in enumerate(queries):
        name = "dashboard:" + re.sub(r"[^A-Za-z0-9_]+", "_", where).strip("_") + f"_{i}"
        names.append(name)
        rules.append({"record": name, "expr": expand_grafana_variables(expr)})
    text = yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, sort_keys=False)
    return text, names


TS_HEADER = Path(__file__).with_name("grafana_types_check.ts")

_PANEL_TYPES = {
    "stat": ("Stat.Options", "{}"),
    "timeseries": ("TimeSeries.Options", "TimeSeries.FieldConfig"),
    "bargauge": ("BarGauge.Options", "{}"),
    "table": ("Table.Options", "Table.FieldConfig"),
}


def dashboard_typescript(dash: dict[str, Any]) -> str:
    """TypeScript that type-checks only if the dashboard fits Grafana's own types: the whole
    JSON as a ``Dashboard`` literal, each panel's options and custom field config against
    its plugin's types, each target against the Prometheus query model."""
    lines = [TS_HEADER.read_text()]
    lines.append(f"export const dashboard: Json<Dashboard> = {json.dumps(dash, indent=2)};")
    for p in dashboard_panels(dash):
        if p["type"] == "row":
            continue
        if p["type"] not in _PANEL_TYPES:  # a panel type this check has no plugin types for
            allowed = " | ".join(json.dumps(t) for t in _PANEL_TYPES)
            lines.append(f"const unsupported_{p['id']}: {allowed} = {json.dumps(p['type'])};")
            continue
        opts, field = _PANEL_TYPES[p["type"]]
        part = {
            "options": p.get("options", {}),
            "custom": p.get("fieldConfig", {}).get("defaults", {}).get("custom", {}),
        }
        lines.append(
            f"export const panel_{p['id']}: Options<{opts}, {field}> = {json.dumps(part)};"
        )
        lines.append(
            f"export const targets_{p['id']}: PrometheusQuery[] = "
            f"{json.dumps(p.get('targets', []))};"
        )
    return "\n".join(lines) + "\n"


TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "noEmit": True,
        "module": "nodenext",
        "moduleResolution": "nodenext",
        "target": "es2022",
        "skipLibCheck": True,
        "noUnusedLocals": False,
    },
    "files": ["check.ts"],
}


def typecheck_dashboard(dash: dict[str, Any], workdir: Path) -> subprocess.CompletedProcess[str]:
    """Run tsc on the generated check; the node_modules of the npm cache are linked in."""
    root = npm_toolchain()
    workdir.mkdir(parents=True, exist_ok=True)
    link = workdir / "node_modules"
    if not link.exists():
        link.symlink_to(root / "node_modules")
    (workdir / "package.json").write_text('{"name": "dashboard-check", "private": true}')
    (workdir / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    (workdir / "check.ts").write_text(dashboard_typescript(dash))
    return run([str(root / "node_modules" / ".bin" / "tsc"), "-p", "."], cwd=workdir)


# -- documents ------------------------------------------------------------------------------


def github_anchor(heading: str) -> str:
    """The fragment GitHub (and most Markdown renderers) give a heading."""
    text = re.sub(r"[`*_~]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(markdown: str) -> list[tuple[int, str]]:
    """(level, text) of every ATX heading outside fenced code blocks."""
    out: list[tuple[int, str]] = []
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m and not fenced:
            out.append((len(m.group(1)), m.group(2)))
    return out


def section_headings(markdown: str, title: str, level: int = 2) -> list[str]:
    """Texts of the level+1 headings inside the ``level`` section called ``title``."""
    out: list[str] = []
    inside = False
    for lvl, text in headings(markdown):
        if lvl <= level:
            inside = lvl == level and text == title
        elif inside and lvl == level + 1:
            out.append(text)
    return out


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())

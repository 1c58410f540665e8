"""fly.toml against the project's strict schema, compose.yaml against the compose spec,
plus the compose rules a schema cannot express (loopback ports, file secrets only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging_support import REPO, VENV_BIN, run

CHECK = VENV_BIN / "check-jsonschema"
FLY_SCHEMA = REPO / "deploy" / "fly.schema.json"


def check_fly(path: Path) -> tuple[int, str]:
    r = run(CHECK, "--schemafile", FLY_SCHEMA, path)
    return r.returncode, r.stdout + r.stderr


def test_fly_toml_matches_the_strict_schema() -> None:
    rc, out = check_fly(REPO / "fly.toml")
    assert rc == 0, out


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("kill_signal =", "kill_sigal ="),  # a typo of a key
        ("internal_port = 6754", 'internal_port = "6754"'),  # a quoted port
        ('MQLITE_SYNC = "FULL"', 'MQLITE_TOKENS = "mqk_inline"'),  # a secret inline
        ('path = "/healthz"', 'paht = "/healthz"'),  # a typo inside a check
        ("[[mounts]]", "[[mount]]"),
        ('strategy = "immediate"', 'strategy = "rolling"'),  # a second machine, one volume
    ],
)
def test_fly_schema_rejects(tmp_path: Path, old: str, new: str) -> None:
    text = (REPO / "fly.toml").read_text()
    assert old in text
    bad = tmp_path / "fly.toml"  # check-jsonschema picks the TOML parser by extension
    bad.write_text(text.replace(old, new, 1))
    rc, out = check_fly(bad)
    assert rc == 1, out


def test_compose_matches_the_compose_spec() -> None:
    r = run(CHECK, "--builtin-schema", "vendor.compose-spec", REPO / "compose.yaml")
    assert r.returncode == 0, r.stdout + r.stderr


def test_compose_spec_catches_a_typo(tmp_path: Path) -> None:
    bad = tmp_path / "compose.yaml"
    bad.write_text((REPO / "compose.yaml").read_text().replace("interval:", "intervall:", 1))
    r = run(CHECK, "--builtin-schema", "vendor.compose-spec", bad)
    assert r.returncode == 1


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO / "compose.yaml").read_text())
    return loaded


def test_compose_semantics_the_schema_cannot_check() -> None:
    doc = _compose()
    services: dict[str, Any] = doc["services"]
    assert set(services) == {"broker", "prometheus", "alertmanager", "grafana"}
    for name, svc in services.items():
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)  # loopback only
        assert svc["restart"] == "unless-stopped", name
        assert svc["logging"]["options"]["max-size"], name  # rotated, never unbounded
        assert "healthcheck" in svc, name
        for dep in svc.get("depends_on", []):
            assert dep in services, (name, dep)
        for secret in svc.get("secrets", []):
            assert secret in doc["secrets"], (name, secret)
        for key, value in (svc.get("environment") or {}).items():
            secretish = any(w in key for w in ("TOKEN", "PASSWORD", "SECRET"))
            assert not secretish or key.endswith("_FILE"), (name, key)  # files, not values
            if key.endswith("_FILE"):
                assert str(value).startswith("/run/secrets/"), (name, key)
    for secret in doc["secrets"].values():
        assert set(secret) == {"file"} and secret["file"].startswith("./secrets/")
    assert services["grafana"]["profiles"] == ["ui"]
    assert "mqlite-monitor.token" in services["prometheus"]["secrets"]
    broker = services["broker"]
    assert broker["read_only"] is True and broker["tmpfs"] == ["/tmp"]
    assert "mqlite-data:/data" in broker["volumes"]


def test_compose_mounts_the_observability_files_at_their_paths() -> None:
    """The ops/ files (written by the observability work) are mounted, read-only, where
    their contents expect them (rules at /etc/prometheus/rules.yml, and so on)."""
    mounts = {
        m.split(":")[0]: m.split(":")[1]
        for svc in _compose()["services"].values()
        for m in svc.get("volumes", [])
        if m.startswith("./")
    }
    assert mounts == {
        "./ops/prometheus/prometheus.compose.yml": "/etc/prometheus/prometheus.yml",
        "./ops/prometheus/rules.yml": "/etc/prometheus/rules.yml",
        "./ops/alertmanager/alertmanager.yml": "/etc/alertmanager/alertmanager.yml",
        "./ops/grafana/provisioning/dashboards": "/etc/grafana/provisioning/dashboards",
        "./ops/grafana/compose/datasources": "/etc/grafana/provisioning/datasources",
        "./ops/grafana/dashboards": "/var/lib/grafana/dashboards/mqlite",
    }

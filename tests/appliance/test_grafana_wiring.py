"""compose.yaml's Grafana, wired as Grafana would see it, without a Grafana (no build of it
can be had from the registries this machine reaches; its licence keeps it out of the
project's own dependencies too). Every provisioning file is found the way Grafana finds
it (under /etc/grafana/provisioning, through the service's bind mounts), every dashboard
provider's ``path:`` must resolve to a mounted directory holding the dashboard, every
datasource URL must name a compose service and a port that service listens on, and the
dashboard's datasource default must be the provisioned uid.

Pinned by a negative control each: the mis-wirings this file was written after (the
dashboards mounted one directory above the provider's path; a datasource on 127.0.0.1,
which inside the container is Grafana itself) are reported.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import yaml
from appliance_support import REPO

PROVISIONING = PurePosixPath("/etc/grafana/provisioning")  # Grafana's default paths.provisioning
HOST_INSTALL_DATASOURCE = (
    REPO / "ops" / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
)


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO / "compose.yaml").read_text())
    return loaded


def _binds(service: dict[str, Any]) -> dict[PurePosixPath, Path]:
    """Container path -> host path of the service's bind mounts (named volumes left out)."""
    binds: dict[PurePosixPath, Path] = {}
    for mount in service.get("volumes", []):
        source, target = mount.split(":")[:2]
        if source.startswith("./"):
            binds[PurePosixPath(target)] = REPO / source
    return binds


def _on_host(binds: dict[PurePosixPath, Path], path: PurePosixPath) -> Path | None:
    """Where a path inside the container is on the host: through the deepest bind mount
    that holds it (None: not bind-mounted, so nothing of ours is there)."""
    holders = [t for t in binds if path == t or t in path.parents]
    if not holders:
        return None
    target = max(holders, key=lambda t: len(t.parts))
    return binds[target].joinpath(*path.parts[len(target.parts) :])


def _listens(service: dict[str, Any]) -> set[int]:
    """The container ports a service answers on: published or exposed ones."""
    ports = {int(str(p).rsplit(":", 1)[-1].split("/")[0]) for p in service.get("ports", [])}
    return ports | {int(str(p).split("/")[0]) for p in service.get("expose", [])}


def wiring_problems(compose: dict[str, Any]) -> list[str]:
    services: dict[str, Any] = compose["services"]
    binds = _binds(services["grafana"])
    problems: list[str] = []
    provisioned_uids: set[str] = set()
    for kind in ("dashboards", "datasources"):
        where = _on_host(binds, PROVISIONING / kind)
        files = sorted(where.glob("*.y*ml")) if where and where.is_dir() else []
        if not files:
            problems.append(f"no {kind} provisioning file at {PROVISIONING / kind}")
        for file in files:
            doc = yaml.safe_load(file.read_text())
            for provider in doc.get("providers", []):
                path = PurePosixPath(provider["options"]["path"])
                host = _on_host(binds, path)
                if host is None or not host.is_dir() or not list(host.glob("*.json")):
                    problems.append(f"dashboard provider path {path}: no dashboard mounted there")
            for ds in doc.get("datasources", []):
                provisioned_uids.add(ds["uid"])
                url = urlsplit(ds["url"])
                host_name, port = url.hostname or "", url.port or 80
                if host_name not in services:
                    problems.append(f"datasource {ds['uid']} url {ds['url']}: no such service")
                elif port not in _listens(services[host_name]):
                    problems.append(f"datasource {ds['uid']} url {ds['url']}: port not served")
    dashboard = json.loads((REPO / "ops" / "grafana" / "dashboards" / "mqlite.json").read_text())
    (variable,) = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    if variable["current"]["value"] not in provisioned_uids:
        problems.append(f"dashboard datasource {variable['current']['value']} not provisioned")
    return problems


def test_grafana_in_compose_finds_its_dashboard_and_prometheus() -> None:
    assert wiring_problems(_compose()) == []


def test_dashboards_mounted_off_the_provider_path_are_reported() -> None:
    broken = copy.deepcopy(_compose())
    grafana = broken["services"]["grafana"]
    grafana["volumes"] = [
        "./ops/grafana/dashboards:/var/lib/grafana/dashboards:ro" if "dashboards:/var" in m else m
        for m in grafana["volumes"]
    ]
    assert wiring_problems(broken) == [
        "dashboard provider path /var/lib/grafana/dashboards/mqlite: no dashboard mounted there"
    ]


def test_a_loopback_datasource_is_reported() -> None:
    """The host-install datasource (127.0.0.1:9090, right next to a local Prometheus)
    mounted into the container: inside it, 127.0.0.1 is Grafana."""
    broken = copy.deepcopy(_compose())
    grafana = broken["services"]["grafana"]
    grafana["volumes"] = [
        f"./{HOST_INSTALL_DATASOURCE.parent.relative_to(REPO)}:{PROVISIONING}/datasources:ro"
        if m.endswith(f"{PROVISIONING}/datasources:ro")
        else m
        for m in grafana["volumes"]
    ]
    problems = wiring_problems(broken)
    assert problems == [
        "datasource mqlite-prometheus url http://127.0.0.1:9090: no such service"
    ], problems


def test_the_compose_datasource_differs_from_the_host_one_only_in_its_url() -> None:
    binds = _binds(_compose()["services"]["grafana"])
    folder = _on_host(binds, PROVISIONING / "datasources")
    assert folder is not None
    (compose_ds,) = yaml.safe_load((folder / "prometheus.yml").read_text())["datasources"]
    (host_ds,) = yaml.safe_load(HOST_INSTALL_DATASOURCE.read_text())["datasources"]
    assert compose_ds["url"] == "http://prometheus:9090"
    assert {**compose_ds, "url": None} == {**host_ds, "url": None}

"""The appliance's shared values agree everywhere they are written. Packaging files cannot
import mqlite.defaults, so this test reads each one: the port, the data path, the health
path, the stop signal and timeout, the uid, and the base image names."""

from __future__ import annotations

import re
import shlex
import tomllib
from typing import Any

import yaml
from packaging_support import REPO

from mqlite import defaults
from mqlite.config import DEFAULT_ADDR, parse_addr
from mqlite.server import serve
from mqlite.server.drain_worker import DrainWorker

DATA = "/data"
DB = "file:/data/mq.db"
HEALTH = "/healthz"
SIGNAL = "SIGTERM"
UID = "10001"


def _dockerfile() -> dict[str, list[str]]:
    """Instruction -> its arguments, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            out.setdefault(word.upper(), []).append(rest.strip())
    return out


def _compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO / "compose.yaml").read_text())
    return doc


def _fly() -> dict[str, Any]:
    return tomllib.loads((REPO / "fly.toml").read_text())


def _unit() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (REPO / "deploy" / "systemd" / "mqlite.service").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


def _seconds(text: str) -> int:
    match = re.fullmatch(r"(\d+)s?", str(text))
    assert match, text
    return int(match.group(1))


def test_port() -> None:
    port = defaults.PORT
    assert parse_addr(DEFAULT_ADDR)[1] == port
    df = _dockerfile()
    assert df["EXPOSE"] == [str(port)]
    assert f"MQLITE_ADDR=:{port}" in " ".join(df["ENV"])
    broker = _compose()["services"]["broker"]
    assert [p.rsplit(":", 1)[1] for p in broker["ports"]] == [str(port)]
    assert _fly()["http_service"]["internal_port"] == port
    (exec_start,) = _unit()["ExecStart"]
    assert shlex.split(exec_start)[1:] == ["serve", "--addr", f"127.0.0.1:{port}"]


def test_data_path_and_database() -> None:
    df = _dockerfile()
    assert df["VOLUME"] == [DATA] and f"MQLITE_DB={DB}" in " ".join(df["ENV"])
    broker = _compose()["services"]["broker"]
    assert broker["environment"]["MQLITE_DB"] == DB
    assert [v.split(":")[1] for v in broker["volumes"]] == [DATA]
    fly = _fly()
    assert fly["env"]["MQLITE_DB"] == DB and [m["destination"] for m in fly["mounts"]] == [DATA]
    unit = _unit()
    assert unit["StateDirectory"] == ["mqlite"]
    assert "MQLITE_DB=file:/var/lib/mqlite/mq.db" in unit["Environment"]


def test_health_path() -> None:
    assert f'Route("{HEALTH}"' in (REPO / "app" / "mqlite" / "server" / "app.py").read_text()
    (health,) = _dockerfile()["HEALTHCHECK"]
    assert f"{HEALTH}'" in health and "':6754'" in health
    test = " ".join(_compose()["services"]["broker"]["healthcheck"]["test"])
    assert f"127.0.0.1:{defaults.PORT}{HEALTH}" in test
    assert [c["path"] for c in _fly()["http_service"]["checks"]] == [HEALTH]


def test_stop_signal_and_a_timeout_longer_than_the_drain() -> None:
    """Every supervisor waits longer than gunicorn's graceful timeout, which itself covers
    uvicorn's shutdown: the broker exits by SIGTERM, never by the fallback SIGKILL."""
    drain = serve.GRACEFUL_TIMEOUT_S
    assert DrainWorker.CONFIG_KWARGS["timeout_graceful_shutdown"] < drain
    assert _dockerfile()["STOPSIGNAL"] == [SIGNAL]
    broker = _compose()["services"]["broker"]
    assert broker["stop_signal"] == SIGNAL and _seconds(broker["stop_grace_period"]) > drain
    fly = _fly()
    assert fly["kill_signal"] == SIGNAL and fly["kill_timeout"] > drain
    unit = _unit()
    assert unit["KillSignal"] == [SIGNAL] and _seconds(unit["TimeoutStopSec"][0]) > drain


def test_uid() -> None:
    df = _dockerfile()
    assert df["USER"] == [f"{UID}:{UID}"]
    assert f"--uid {UID}" in " ".join(df["RUN"])
    assert _compose()["services"]["broker"]["user"] == f"{UID}:{UID}"
    # The unit runs as a systemd DynamicUser named mqlite (no fixed uid on a host).
    assert _unit()["DynamicUser"] == ["yes"] and _unit()["User"] == ["mqlite"]


def test_base_images_are_the_stand_ins_the_tests_build() -> None:
    script = (REPO / "ops" / "ci" / "standin-images.sh").read_text()
    standins = dict(re.findall(r"^(PYTHON|PROMETHEUS|ALERTMANAGER)=(\S+)$", script, re.M))
    froms = {f.split()[0] for f in _dockerfile()["FROM"]}
    assert froms == {standins["PYTHON"]}
    images = {n: s.get("image") for n, s in _compose()["services"].items()}
    assert images["prometheus"] == standins["PROMETHEUS"]
    assert images["alertmanager"] == standins["ALERTMANAGER"]


def test_the_compose_prometheus_is_the_host_one_with_compose_names() -> None:
    """ops/prometheus/prometheus.compose.yml differs from prometheus.yml only where the
    compose network differs: the broker and alertmanager service names and the monitor
    token's compose secret path (compose.yaml mounts it; tests/appliance runs it)."""
    host = yaml.safe_load((REPO / "ops" / "prometheus" / "prometheus.yml").read_text())
    comp = yaml.safe_load((REPO / "ops" / "prometheus" / "prometheus.compose.yml").read_text())
    ((job,),) = [[j for j in comp["scrape_configs"] if j["job_name"] == "mqlite"]]
    assert job["static_configs"] == [{"targets": ["broker:6754"]}]
    assert job["authorization"]["credentials_file"] == "/run/secrets/mqlite-monitor.token"
    (am,) = comp["alerting"]["alertmanagers"]
    assert am["static_configs"] == [{"targets": ["alertmanager:9093"]}]
    secrets = _compose()["services"]["prometheus"]["secrets"]
    assert "mqlite-monitor.token" in secrets
    job["static_configs"] = host["scrape_configs"][0]["static_configs"]
    job["authorization"] = host["scrape_configs"][0]["authorization"]
    comp["alerting"] = host["alerting"]
    assert comp == host


def test_the_units_descriptor_limit_covers_the_connection_cap() -> None:
    """Each connection holds a descriptor: the unit's LimitNOFILE must fit the default cap
    plus the reserve (else the worker lowers the cap and logs it), and the operations doc
    quotes the unit's value."""
    (limit,) = _unit()["LimitNOFILE"]
    assert int(limit) >= defaults.MAX_CONNECTIONS + defaults.FD_RESERVE
    assert f"LimitNOFILE={limit}" in (REPO / "docs" / "operations.md").read_text()

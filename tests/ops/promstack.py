"""A real monitoring stack for tests: Debian's ``prometheus`` and ``prometheus-alertmanager``
as plain processes on free loopback ports, plus a local HTTP webhook sink that records
what Alertmanager delivers.

Everything is derived from the repository's own ops files, so the stack exercises them:

* ``prometheus_config``: ops/prometheus/prometheus.yml with the ``mqlite`` job pointed at the
  test broker and its token file, extra copies of that job (e.g. a wrong token), a 1 s
  interval, the derived rules and the test Alertmanager.
* ``short_for_rules``: ops/prometheus/rules.yml with every ``for:`` cut to 1 s (the exprs,
  labels and annotations unchanged), so alerts fire within a scrape or two.
* ``alertmanager_config``: ops/alertmanager/alertmanager.yml with every webhook pointed at
  the sink (same path, so the route taken is visible) and 1 s group timers.

Readiness and every expectation are polled against deadlines; nothing sleeps for a fixed
time. ``PromStack`` is a context manager: leaving it stops every process it started.

Typical use (see test_real_stack.py)::

    with PromStack(tmp_path, target="127.0.0.1:6754", token="...") as stack:
        stack.prometheus.wait_target("mqlite", "up")
        stack.prometheus.wait_alert("MQLiteDeadLettersRetained", "firing")
        stack.sink.wait_for(lambda p: p["status"] == "firing")
"""

from __future__ import annotations

import contextlib
import copy
import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import yaml
from ops_support import ALERTMANAGER_CONFIG, PROM_CONFIG, RULES, tool

MONITOR_TOKEN = "mqk_ops_monitor_" + "m" * 24
WRONG_TOKEN = "mqk_not_a_configured_token_" + "x" * 16
READY_DEADLINE_S = 15.0
STOP_DEADLINE_S = 10.0
POLL_S = 0.2
MQLITE_JOB = "mqlite"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(what: str, probe: Callable[[], Any], deadline_s: float) -> Any:
    """Poll ``probe`` until it returns something truthy; fail with ``what`` and the last
    value (or exception) at the deadline."""
    deadline = time.monotonic() + deadline_s
    last: Any = None
    while True:
        try:
            last = probe()
            if last:
                return last
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {deadline_s} s waiting for {what}; last: {last!r}"
            )
        time.sleep(POLL_S)


# -- derived configuration ------------------------------------------------------------------


def short_for_rules(source: Path = RULES, for_: str = "1s") -> dict[str, Any]:
    """The production rules with every ``for:`` set to ``for_`` (rules without one keep none)."""
    rules = yaml.safe_load(source.read_text())
    for group in rules["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = for_
    return rules


def prometheus_config(
    *,
    target: str,
    token_file: Path,
    rule_file: Path,
    alertmanager: str,
    extra_jobs: Mapping[str, Path] = {},
    interval: str = "1s",
) -> dict[str, Any]:
    """ops/prometheus/prometheus.yml aimed at a test broker. ``extra_jobs`` maps job names to
    token files: copies of the mqlite job that differ only in their credential."""
    cfg = yaml.safe_load(PROM_CONFIG.read_text())
    cfg["global"].update(
        scrape_interval=interval, evaluation_interval=interval, scrape_timeout=interval
    )
    cfg["rule_files"] = [str(rule_file)]
    cfg["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]}
    (job,) = [j for j in cfg["scrape_configs"] if j["job_name"] == MQLITE_JOB]
    job.update(scrape_interval=interval, scrape_timeout=interval)
    job["static_configs"] = [{"targets": [target]}]
    job["authorization"]["credentials_file"] = str(token_file)
    jobs = [job]
    for name, path in extra_jobs.items():
        extra = copy.deepcopy(job)
        extra["job_name"] = name
        extra["authorization"]["credentials_file"] = str(path)
        jobs.append(extra)
    cfg["scrape_configs"] = jobs
    return cfg


def alertmanager_config(sink_url: str) -> dict[str, Any]:
    """ops/alertmanager/alertmanager.yml delivering to the sink within about a second."""
    cfg = yaml.safe_load(ALERTMANAGER_CONFIG.read_text())

    def fast(route: dict[str, Any]) -> None:
        for key in ("group_wait", "group_interval"):
            if key in route:
                route[key] = "1s"
        if "repeat_interval" in route:
            route["repeat_interval"] = "1m"
        for child in route.get("routes", []):
            fast(child)

    fast(cfg["route"])
    cfg["route"].update(group_wait="1s", group_interval="1s")
    for receiver in cfg["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = sink_url + urlsplit(hook["url"]).path
    return cfg


# -- processes ------------------------------------------------------------------------------


class Process:
    """A child process in its own session, its output in files under ``workdir``."""

    def __init__(self, name: str, cmd: list[str], workdir: Path) -> None:
        self.name = name
        self.log = workdir / f"{name}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                cmd,
                cwd=workdir,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


class HttpService:
    """A started Prometheus-style server: base URL, readiness, JSON API."""

    def __init__(self, process: Process, port: int) -> None:
        self.process = process
        self.base_url = f"http://127.0.0.1:{port}"
        self.http = httpx.Client(base_url=self.base_url, timeout=5.0)

    def wait_ready(self) -> None:
        def ready() -> bool:
            if not self.process.alive():
                raise AssertionError(f"{self.process.name} exited:\n{self.process.output()}")
            with contextlib.suppress(httpx.TransportError):
                return self.http.get("/-/ready").status_code == 200
            return False

        wait_until(f"{self.process.name} /-/ready", ready, READY_DEADLINE_S)

    def api(self, path: str, **params: Any) -> Any:
        r = self.http.get(path, params=params)
        r.raise_for_status()
        body = r.json()
        if isinstance(body, dict) and body.get("status") not in (None, "success"):
            raise AssertionError(f"{path}: {body}")
        return body.get("data", body) if isinstance(body, dict) else body

    def close(self) -> None:
        self.http.close()
        self.process.stop()


class Prometheus(HttpService):
    def targets(self, job: str) -> list[dict[str, Any]]:
        data = self.api("/api/v1/targets", state="active")
        return [t for t in data["activeTargets"] if t["labels"].get("job") == job]

    def wait_target(self, job: str, health: str, deadline_s: float = 20.0) -> dict[str, Any]:
        """The first target of ``job`` once its health is ``health`` (up/down)."""

        def probe() -> dict[str, Any] | None:
            found = [t for t in self.targets(job) if t["health"] == health]
            return found[0] if found else None

        found: dict[str, Any] = wait_until(f"job {job} {health}", probe, deadline_s)
        return found

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result vector (or scalar as a one-element list)."""
        data = self.api("/api/v1/query", query=expr)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        result: list[dict[str, Any]] = data["result"]
        return result

    def values(self, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
        """An instant query as {sorted label pairs (without __name__): value}, the shape to
        compare with another source (e.g. Observe's numbers)."""
        return {
            tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__")): float(
                r["value"][1]
            )
            for r in self.query(expr)
        }

    def metric_names(self) -> set[str]:
        return set(self.api("/api/v1/label/__name__/values"))

    def alerts(self, name: str) -> list[dict[str, Any]]:
        return [a for a in self.api("/api/v1/alerts")["alerts"] if a["labels"]["alertname"] == name]

    def wait_alert(
        self, name: str, state: str | None, deadline_s: float = 20.0, **labels: str
    ) -> list[dict[str, Any]]:
        """Wait until alert ``name`` (with ``labels``) is in ``state``; ``None``: until it is
        neither pending nor firing."""

        def probe() -> Any:
            mine = [
                a
                for a in self.alerts(name)
                if all(a["labels"].get(k) == v for k, v in labels.items())
            ]
            if state is None:
                return [{"inactive": True}] if not mine else None
            return [a for a in mine if a["state"] == state]

        result: list[dict[str, Any]] = wait_until(
            f"alert {name} {state or 'inactive'}", probe, deadline_s
        )
        return result

    def rules(self) -> list[dict[str, Any]]:
        return [r for g in self.api("/api/v1/rules")["groups"] for r in g["rules"]]


class WebhookSink:
    """A loopback HTTP server recording every JSON POST (Alertmanager's webhook payloads)."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                payload = json.loads(self.rfile.read(length) or b"{}")
                payload["_path"] = self.path
                with sink._cond:
                    sink.received.append(payload)
                    sink._cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], deadline_s: float = 20.0
    ) -> dict[str, Any]:
        """The first payload (received so far or later) for which ``predicate`` holds."""
        deadline = time.monotonic() + deadline_s
        with self._cond:
            while True:
                for p in self.received:
                    if predicate(p):
                        return p
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no matching webhook within {deadline_s} s; received: {self.received!r}"
                    )
                self._cond.wait(left)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def alert_in(payload: dict[str, Any], name: str, status: str, **labels: str) -> bool:
    """Does an Alertmanager webhook payload carry alert ``name`` with ``status``?"""
    return any(
        a["labels"].get("alertname") == name
        and a["status"] == status
        and all(a["labels"].get(k) == v for k, v in labels.items())
        for a in payload.get("alerts", [])
    )


@dataclass
class Monitored:
    """A broker under a stack (the ``monitored`` fixture): the file whose existence makes
    its database unreadable (``tests/e2e/faulty_serve.py``) and its diagnostic log."""

    broker: Any
    stack: PromStack
    fault: Path
    diagnostic_log: Path


class PromStack:
    """Sink + Alertmanager + Prometheus scraping ``target`` with ``token`` as job mqlite.

    ``extra_tokens`` adds jobs that scrape the same target with other tokens (job name →
    token). ``rules`` defaults to the production rules with 1 s ``for:``.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        target: str,
        token: str,
        extra_tokens: Mapping[str, str] = {},
        rules: dict[str, Any] | None = None,
    ) -> None:
        self.workdir = workdir
        self.target = target
        self.token = token
        self.extra_tokens = dict(extra_tokens)
        self.rules = rules if rules is not None else short_for_rules()
        self.sink: WebhookSink
        self.alertmanager: HttpService
        self.prometheus: Prometheus
        self._started: list[Any] = []

    def _write_secret(self, name: str, token: str) -> Path:
        path = self.workdir / f"{name}.token"
        path.write_text(token + "\n")
        path.chmod(0o600)
        return path

    def __enter__(self) -> PromStack:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        w = self.workdir
        w.mkdir(parents=True, exist_ok=True)
        self.sink = WebhookSink()
        self._started.append(self.sink)

        am_port = free_port()
        am_cfg = w / "alertmanager.yml"
        am_cfg.write_text(yaml.safe_dump(alertmanager_config(self.sink.url), sort_keys=False))
        (w / "am-data").mkdir(exist_ok=True)
        am = Process(
            "alertmanager",
            [
                tool("prometheus-alertmanager"),
                f"--config.file={am_cfg}",
                f"--storage.path={w / 'am-data'}",
                f"--web.listen-address=127.0.0.1:{am_port}",
                "--cluster.listen-address=",  # no gossip port
            ],
            w,
        )
        self.alertmanager = HttpService(am, am_port)
        self._started.append(self.alertmanager)

        rules_path = w / "rules.yml"
        rules_path.write_text(yaml.safe_dump(self.rules, sort_keys=False))
        extra = {job: self._write_secret(job, tok) for job, tok in self.extra_tokens.items()}
        prom_port = free_port()
        prom_cfg = w / "prometheus.yml"
        prom_cfg.write_text(
            yaml.safe_dump(
                prometheus_config(
                    target=self.target,
                    token_file=self._write_secret(MQLITE_JOB, self.token),
                    rule_file=rules_path,
                    alertmanager=f"127.0.0.1:{am_port}",
                    extra_jobs=extra,
                ),
                sort_keys=False,
            )
        )
        (w / "prom-data").mkdir(exist_ok=True)
        prom = Process(
            "prometheus",
            [
                tool("prometheus"),
                f"--config.file={prom_cfg}",
                f"--storage.tsdb.path={w / 'prom-data'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
                "--web.enable-lifecycle",
                "--rules.alert.resend-delay=1s",
            ],
            w,
        )
        self.prometheus = Prometheus(prom, prom_port)
        self._started.append(self.prometheus)

        self.alertmanager.wait_ready()
        self.prometheus.wait_ready()

    def logs(self) -> str:
        return "\n".join(
            f"--- {s.process.name} ---\n{s.process.output()}"
            for s in self._started
            if isinstance(s, HttpService)
        )

    def close(self) -> None:
        for part in reversed(self._started):
            with contextlib.suppress(Exception):
                part.close()
        self._started.clear()

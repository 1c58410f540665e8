"""`podman-compose up` of the REAL compose.remote.yaml: a sqld primary, a sqld replica that
follows it over gRPC, and the broker on them with no data volume, the credentials made by
the REAL deploy/compose-secrets.sh and deploy/sqld-secrets.sh. sqld is the stand-in image
of ops/ci/standin-images.sh (the pinned, sha256-verified binary under the upstream name).

Derived for the test only: the two sqld HTTP ports are also published on loopback, so the
test can look at the servers directly (the file keeps them on the compose network).
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from functools import partial
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
    container_story,
    free_port,
    healthy,
    inspect,
    podman,
    podman_env,
    wait_for,
)

SQLD_SERVICES = ("sqld-primary", "sqld-replica")
QUEUE = "remote-compose"
REPLACED_QUEUE = "remote-replaced"  # the second test's, on the same stack
SECRETS = "/run/secrets"
# docs/deployment.md's `docker run` of the remote variant (the test checks the page says
# the same), with the compose stack's DSN instead of a Turso one.
RUN_FLAGS = (
    ("--stop-timeout", "15"),
    ("--read-only",),
    ("--tmpfs", "/tmp"),
    ("--tmpfs", "/data:mode=0555"),
    ("-e", f"MQLITE_TOKENS_FILE={SECRETS}/mqlite-admin.token"),
    ("-e", f"MQLITE_DB_AUTH_TOKEN_FILE={SECRETS}/mqlite-db-auth.token"),
)


def derived_compose(sqld_ports: dict[str, int]) -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load((REPO / "compose.remote.yaml").read_text())
    for svc, port in sqld_ports.items():
        compose["services"][svc]["ports"] = [f"127.0.0.1:{port}:8080"]
    return compose


@pytest.fixture(scope="module")
def remote_stack(
    image: str, network_dns: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """One stack for the module (a compose up of two sqld and a broker is the slow part):
    the tests use queues of their own, and the one that replaces the broker runs last."""
    project = tmp_path_factory.mktemp("remote") / "project"
    project.mkdir()
    sqld_ports = {svc: free_port() for svc in SQLD_SERVICES}
    text = yaml.safe_dump(derived_compose(sqld_ports), sort_keys=False)
    (project / "compose.remote.yaml").write_text(text)
    for script in ("compose-secrets.sh", "sqld-secrets.sh"):
        subprocess.run(["sh", str(REPO / "deploy" / script), "./secrets"],
                       cwd=project, check=True, capture_output=True)  # fmt: skip
    # The image by id: the tag is shared by every checkout on this machine.
    image_id = podman("image", "inspect", "--format", "{{.Id}}", image).strip()
    port = free_port()
    env = dict(podman_env(), MQLITE_IMAGE=image_id, MQLITE_PORT=str(port))
    name = f"{PREFIX}-remote"
    compose = compose_project(project, "compose.remote.yaml", name, env)

    up = compose("up", "-d")
    replacement = f"{name}-docker-run"
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        yield {
            "name": name,
            "secrets": project / "secrets",
            "broker": f"http://127.0.0.1:{port}",
            "sqld": {svc: f"http://127.0.0.1:{p}" for svc, p in sqld_ports.items()},
            "image": image_id,
            "replacement": replacement,
        }
    finally:
        for extra in (replacement, f"{replacement}-forged"):  # before their network goes
            podman("rm", "-f", "-t", "0", extra, check=False)
        compose("down", "-v", "-t", "5")


def _sql(url: str, token: str | None, sql: str) -> httpx.Response:
    """One statement on sqld's HTTP API (Hrana over /v3/pipeline), without mqlite's client."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    body = {"requests": [{"type": "execute", "stmt": {"sql": sql}}, {"type": "close"}]}
    return httpx.post(f"{url}/v3/pipeline", json=body, headers=headers, timeout=5)


def _queue_names(url: str, token: str) -> list[str]:
    r = _sql(url, token, "SELECT name FROM queues ORDER BY name")
    assert r.status_code == 200, r.text
    rows = r.json()["results"][0]["response"]["result"]["rows"]
    return [row[0]["value"] for row in rows]


def _peek(rpc: Rpc, queue: str) -> list[str] | None:
    r = rpc.http.post("/mqlite.v1.QueueService/Peek", json={"queue": queue})
    if r.status_code != 200 or not r.json().get("messages"):
        return None
    return [base64.b64decode(m["body"]).decode() for m in r.json()["messages"]]


def _podman_rc(*args: str) -> int:
    return subprocess.run(["podman", *args], env=podman_env(), capture_output=True).returncode


def _healthcheck_passes(container: str) -> bool:
    return _podman_rc("healthcheck", "run", container) == 0


def test_the_remote_stack_serves_from_sqld_with_no_broker_volume(
    remote_stack: dict[str, Any],
) -> None:
    secrets, broker = remote_stack["secrets"], remote_stack["broker"]
    primary, replica = (remote_stack["sqld"][s] for s in SQLD_SERVICES)
    admin = (secrets / "mqlite-admin.token").read_text().strip()
    jwt = (secrets / "mqlite-db-auth.token").read_text().strip()
    # podman ignores depends_on conditions: a broker that started before sqld answered
    # exits and `restart: unless-stopped` brings it back; poll, never sleep.
    wait_for(
        "the broker on sqld /healthz",
        lambda: healthy(broker),
        90,
        explain=partial(container_story, f"{remote_stack['name']}_broker_1"),
    )

    rpc = Rpc(broker, admin)
    rpc.create_queue(QUEUE)
    rpc.send(QUEUE, "through-sqld")
    assert rpc.receive_all(QUEUE) == ["through-sqld"]  # receive + complete on the primary
    status = rpc.call("AdminService/Status", {})
    rpc.close()
    assert status["backend"] == "remote libSQL/Turso" and status["remote"] is True
    assert status["location"] == "http://***:8080", status  # the host is masked

    # The data is on the primary, which requires the JWT; the replica caught up over gRPC.
    assert _sql(primary, None, "SELECT 1").status_code == 401
    assert _sql(primary, "not-a-jwt", "SELECT 1").status_code == 401
    assert QUEUE in _queue_names(primary, jwt)
    wait_for("the replica to follow the primary", lambda: QUEUE in _queue_names(replica, jwt))
    assert _sql(replica, None, "SELECT 1").status_code == 401

    containers = {svc: f"{remote_stack['name']}_{svc}_1" for svc in ("broker", *SQLD_SERVICES)}
    # MQLITE_DB_REPLICA is wired: Peek reads on the replica (no silent move to the
    # primary), so with the replica stopped it fails as a 503, while a send (primary)
    # works; started again, the replica catches up and Peek shows that send.
    rpc = Rpc(broker, admin)
    podman("stop", "-t", "10", containers["sqld-replica"])
    down = rpc.http.post("/mqlite.v1.QueueService/Peek", json={"queue": QUEUE})
    assert down.status_code == 503 and down.json()["reason"] == "storage_unreachable", down.text
    rpc.send(QUEUE, "sent-while-the-replica-was-down")
    podman("start", containers["sqld-replica"])
    peeked = wait_for("Peek on the restarted replica", lambda: _peek(rpc, QUEUE), 60)
    assert peeked == ["sent-while-the-replica-was-down"]
    rpc.close()
    # No broker volume: only the two secret files are mounted; the image's VOLUME /data
    # is covered by a tmpfs the broker cannot write, so no anonymous volume exists.
    mounts = inspect(containers["broker"])["Mounts"]
    assert sorted(m["Destination"] for m in mounts) == [
        "/run/secrets/mqlite-admin.token",
        "/run/secrets/mqlite-db-auth.token",
    ], mounts
    assert {m["Type"] for m in mounts} == {"bind"}
    project = remote_stack["name"]  # (an anonymous volume would be in `mounts` above)
    vols = podman("volume", "ls", "--format", "{{.Name}}", "--filter", f"name={project}")
    assert sorted(vols.split()) == sorted(f"{project}_{s}-data" for s in SQLD_SERVICES)
    assert _podman_rc("exec", containers["broker"], "touch", "/data/probe") != 0, (
        "/data is writable"
    )

    # No secret in any container's configuration (env, args, labels): they are files.
    for svc, cname in containers.items():
        config = json.dumps(inspect(cname))
        for secret in (jwt, admin):
            assert secret not in config, f"a secret is visible in `podman inspect {cname}`"
        uid = podman("exec", cname, "id", "-u").strip()
        assert uid != "0", f"{svc} runs as root"
        # The compose healthchecks themselves (podman runs them on demand, no systemd).
        wait_for(f"{svc}'s healthcheck", partial(_healthcheck_passes, cname), 30)
    broker_env = inspect(containers["broker"])["Config"]["Env"]
    assert not [e for e in broker_env if e.startswith("MQLITE_DB_AUTH_TOKEN=")], broker_env


def _docs_run_block() -> str:
    text = (REPO / "docs" / "deployment.md").read_text()
    start = text.index("**`docker run` without a volume.**")
    return " ".join(text[start : text.index("```\n", text.index("```bash", start) + 7)].split())


def test_the_docker_run_variant_replaces_the_broker_on_the_same_data(
    remote_stack: dict[str, Any],
) -> None:
    """The broker holds no state: stopped by SIGTERM it releases its lease, and the
    `docker run` variant of the docs takes over the same database at once (after one
    with a JWT of another key was refused)."""
    secrets, broker = remote_stack["secrets"], remote_stack["broker"]
    primary = remote_stack["sqld"]["sqld-primary"]
    admin = (secrets / "mqlite-admin.token").read_text().strip()
    jwt = (secrets / "mqlite-db-auth.token").read_text().strip()
    docs = _docs_run_block()
    for flag in RUN_FLAGS:
        assert " ".join(flag) in docs.replace("'", ""), flag  # the page runs what is tested
    old = f"{remote_stack['name']}_broker_1"
    wait_for("the broker on sqld /healthz", lambda: healthy(broker), 90,
             explain=partial(container_story, old))  # fmt: skip
    rpc = Rpc(broker, admin)
    rpc.create_queue(REPLACED_QUEUE)
    rpc.send(REPLACED_QUEUE, "outlives-its-broker")
    rpc.close()

    networks = list(inspect(old)["NetworkSettings"]["Networks"])
    podman("stop", "-t", "15", old)
    lease = _sql(primary, jwt, "SELECT count(*) FROM broker_lease").json()
    assert lease["results"][0]["response"]["result"]["rows"] == [
        [{"type": "integer", "value": "0"}]
    ]

    def run_args(jwt_dir: Path) -> list[str]:
        mounts = [
            f"{where / name}:{SECRETS}/{name}:ro"
            for where, name in ((secrets, "mqlite-admin.token"), (jwt_dir, "mqlite-db-auth.token"))
        ]
        return [
            "--network", networks[0], *[a for f in RUN_FLAGS for a in f],
            *[a for m in mounts for a in ("-v", m)], "-e", "MQLITE_DB=http://sqld-primary:8080",
            remote_stack["image"],
        ]  # fmt: skip

    # A JWT signed by another key: refused by sqld, the broker exits, the token unlogged.
    other = secrets.parent / "other-key"
    subprocess.run(["sh", str(REPO / "deploy" / "sqld-secrets.sh"), str(other)],
                   check=True, capture_output=True)  # fmt: skip
    forged = (other / "mqlite-db-auth.token").read_text().strip()
    refused = subprocess.run(
        ["podman", "run", "--rm", "--name", f"{remote_stack['replacement']}-forged",
         *run_args(other)],
        env=podman_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "HTTP 401" in refused.stdout + refused.stderr, refused.stdout[-2000:]
    assert forged not in refused.stdout + refused.stderr

    port = free_port()
    podman("run", "-d", "--name", remote_stack["replacement"],
           "-p", f"127.0.0.1:{port}:6754", *run_args(secrets))  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_for("the docker-run broker /healthz", lambda: healthy(url), 30)
    rpc = Rpc(url, admin)
    assert rpc.receive_all(REPLACED_QUEUE) == ["outlives-its-broker"]
    assert rpc.call("AdminService/Status", {})["location"] == "http://***:8080"
    rpc.close()
    assert jwt not in json.dumps(inspect(remote_stack["replacement"]))

"""The remote variant's files agree with the app and with each other (static, no
containers): compose.remote.yaml against the compose spec and the wiring a schema cannot
see (the broker's DSNs name the sqld services and ports, the replica follows the
primary's gRPC port, secrets are files), fly.remote.toml against the strict fly schema,
both equal to their local twins outside the storage settings, the env var names the app
reads, the stand-in's Containerfile under hadolint, and deploy/sqld-secrets.sh minting a
JWT that the public key verifies."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from appliance_support import REPO

from mqlite.config import Settings
from mqlite.engine.location import parse_dsn

BIN = Path(sys.executable).parent  # check-jsonschema and hadolint live in the venv
REMOTE_VARS = ("MQLITE_DB", "MQLITE_DB_REPLICA", "MQLITE_DB_AUTH_TOKEN")
SECTION = "## Remote libSQL"


def _run(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd)


def _remote() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO / "compose.remote.yaml").read_text())
    return doc


def _flags(svc: dict[str, Any]) -> dict[str, str]:
    return dict(arg.removeprefix("--").split("=", 1) for arg in svc["command"] if "=" in arg)


def _docs_section() -> str:
    text = (REPO / "docs" / "deployment.md").read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else None]


def test_compose_remote_matches_the_compose_spec(tmp_path: Path) -> None:
    spec = ("--builtin-schema", "vendor.compose-spec")
    r = _run(BIN / "check-jsonschema", *spec, REPO / "compose.remote.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    bad = tmp_path / "compose.remote.yaml"
    bad.write_text((REPO / "compose.remote.yaml").read_text().replace("retries:", "retrys:", 1))
    assert _run(BIN / "check-jsonschema", *spec, bad).returncode == 1  # the check can fail


def test_compose_remote_wiring_the_schema_cannot_check() -> None:
    doc = _remote()
    services: dict[str, Any] = doc["services"]
    assert set(services) == {"sqld-primary", "sqld-replica", "broker"}
    primary, replica, broker = (services[s] for s in ("sqld-primary", "sqld-replica", "broker"))
    env = broker["environment"]
    for var, svc in (("MQLITE_DB", primary), ("MQLITE_DB_REPLICA", replica)):
        url = urlsplit(env[var])
        name = "sqld-primary" if svc is primary else "sqld-replica"
        assert (url.scheme, url.hostname) == ("http", name), var
        assert str(url.port) == _flags(svc)["http-listen-addr"].rsplit(":", 1)[1], var
    grpc = urlsplit(_flags(replica)["primary-grpc-url"])
    assert grpc.hostname == "sqld-primary"
    assert str(grpc.port) == _flags(primary)["grpc-listen-addr"].rsplit(":", 1)[1]
    assert "primary-grpc-url" not in _flags(primary) and "grpc-listen-addr" not in _flags(replica)
    for name, svc in services.items():
        assert svc.get("user", "0").split(":")[0] not in ("0", "root"), name  # non-root
        assert svc["read_only"] is True and svc["restart"] == "unless-stopped", name
        assert "healthcheck" in svc, name
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)
        for secret in svc.get("secrets", []):
            assert secret in doc["secrets"], (name, secret)
        for dep in svc.get("depends_on", {}):
            assert dep in services, (name, dep)
    assert "ports" not in primary and "ports" not in replica  # sqld stays on this network
    for svc in (primary, replica):
        key = _flags(svc)["auth-jwt-key-file"]
        assert key.startswith("/run/secrets/") and key.rsplit("/", 1)[1] in svc["secrets"]
        assert svc["image"] == primary["image"]
    for secret in doc["secrets"].values():
        assert set(secret) == {"file"} and secret["file"].startswith("./secrets/")
    assert "volumes" not in broker  # no data volume; /data is covered by a tmpfs
    assert any(t.startswith("/data:") for t in broker["tmpfs"])


def test_the_broker_gets_its_token_from_the_secret_file_only() -> None:
    broker = _remote()["services"]["broker"]
    env = broker["environment"]
    assert not [k for k in env if "TOKEN" in k and not k.endswith("_FILE")]
    path = env["MQLITE_DB_AUTH_TOKEN_FILE"]
    assert (
        path.startswith("/run/secrets/") and path.removeprefix("/run/secrets/") in broker["secrets"]
    )
    assert "entrypoint" not in broker  # the image's own `mqlite serve`, nothing in between


def test_the_remote_broker_matches_the_local_one_outside_storage() -> None:
    local = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]["broker"]
    remote = _remote()["services"]["broker"]
    storage = {"environment", "volumes", "secrets", "tmpfs", "depends_on"}
    assert {k: v for k, v in remote.items() if k not in storage} == {
        k: v for k, v in local.items() if k not in storage
    }
    assert "/tmp" in remote["tmpfs"] and local["tmpfs"] == ["/tmp"]


def test_the_sqld_image_is_the_stand_in_the_ci_builds() -> None:
    script = (REPO / "ops" / "ci" / "standin-images.sh").read_text()
    (standin,) = re.findall(r"^SQLD=(\S+)$", script, re.M)
    assert _remote()["services"]["sqld-primary"]["image"] == f"${{SQLD_IMAGE:-{standin}}}"
    r = _run(
        BIN / "hadolint", "--no-color", "--config", REPO / ".hadolint.yaml",
        REPO / "ops" / "ci" / "libsql-server.Containerfile",
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr


def _fly(name: str) -> dict[str, Any]:
    return tomllib.loads((REPO / name).read_text())


def _check_fly(path: Path) -> subprocess.CompletedProcess[str]:
    return _run(BIN / "check-jsonschema", "--schemafile", REPO / "deploy" / "fly.schema.json", path)


def test_fly_remote_matches_the_strict_schema_and_fly_toml(tmp_path: Path) -> None:
    r = _check_fly(REPO / "fly.remote.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    remote, local = _fly("fly.remote.toml"), _fly("fly.toml")
    assert "mounts" not in remote and "MQLITE_SYNC" not in remote["env"]
    assert {k: v for k, v in remote.items() if k != "env"} == {
        k: v for k, v in local.items() if k not in ("env", "mounts")
    }
    text = (REPO / "fly.remote.toml").read_text()
    # The schema ties the volume to the DSN: a mount on the remote file, the local file
    # without its mount, and the libSQL token in [env] are each refused.
    mount = '[[mounts]]\n  source = "mqlite_data"\n  destination = "/data"\n\n[http_service]'
    local_text = (REPO / "fly.toml").read_text()
    unmounted = re.sub(r"\[\[mounts\]\]\n(  .*\n)+", "", local_text)
    token = text.replace("[env]\n", '[env]\n  MQLITE_DB_AUTH_TOKEN = "jwt-inline"\n', 1)
    for i, bad_text in enumerate((text.replace("[http_service]", mount, 1), unmounted, token)):
        assert bad_text not in (text, local_text)
        bad = tmp_path / f"bad{i}.toml"  # check-jsonschema picks the TOML parser by extension
        bad.write_text(bad_text)
        assert _check_fly(bad).returncode == 1, bad_text


NAME = r"\bMQLITE_[A-Z0-9_]*[A-Z0-9]\b"


def _names_the_app_reads() -> set[str]:
    """The MQLITE_* names the code holds as string literals (a mention in a comment does
    not count), plus NAME_FILE for each secret read through ``read_secret``."""
    read: set[str] = set()
    for source in (REPO / "app" / "mqlite").rglob("*.py"):
        code = source.read_text()
        read |= set(re.findall(rf"[\"']({NAME})[\"']", code))
        read |= {f"{n}_FILE" for n in re.findall(rf"read_secret\(\s*\w+,\s*\"({NAME})\"", code)}
    return read


def test_the_remote_files_use_the_variable_names_the_app_reads() -> None:
    """Every MQLITE_* name in the remote compose file, fly.remote.toml and the docs
    section is one the app's code reads, and each of them names all three remote ones.
    The compose file's own ``${MQLITE_PORT:-...}`` knobs are interpolated by compose."""
    compose = (REPO / "compose.remote.yaml").read_text()
    knobs = set(re.findall(rf"\$\{{({NAME}):-", compose))
    artifacts = {
        "compose.remote.yaml": compose,
        "fly.remote.toml": (REPO / "fly.remote.toml").read_text(),
        "docs/deployment.md": _docs_section(),
    }
    read = _names_the_app_reads()
    assert {"MQLITE_DB", "MQLITE_DB_AUTH_TOKEN", "MQLITE_TOKENS_FILE"} <= read  # the probe works
    for where, text in artifacts.items():
        used = set(re.findall(NAME, text)) - knobs
        assert used - read == set(), f"{where} names variables the app does not read"
        missing = {v for v in REMOTE_VARS if v not in used and f"{v}_FILE" not in used}
        assert not missing, (where, missing)  # each named, itself or as its secret file


def test_the_dsns_of_the_files_are_remote_for_the_app() -> None:
    broker = _remote()["services"]["broker"]["environment"]
    env = {k: v for k, v in broker.items() if not k.endswith("_FILE")}
    settings = Settings.from_env({**env, "MQLITE_DB_AUTH_TOKEN": "jwt-from-the-file"})
    assert settings.db == "http://sqld-primary:8080"
    assert settings.db_auth_token == "jwt-from-the-file"
    for dsn in (
        settings.db,
        broker["MQLITE_DB_REPLICA"],
        _fly("fly.remote.toml")["env"]["MQLITE_DB"],
    ):
        location = parse_dsn(dsn)
        assert location.is_remote, dsn
        assert urlsplit(dsn).hostname not in location.shown  # Status masks the host


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def test_sqld_secrets_mint_a_jwt_the_public_key_verifies(tmp_path: Path) -> None:
    script = REPO / "deploy" / "sqld-secrets.sh"
    first = _run("sh", script, "./secrets", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    secrets = tmp_path / "secrets"
    modes = {p.name: p.stat().st_mode & 0o777 for p in secrets.iterdir()}
    assert modes == {"sqld-jwt.key": 0o600, "sqld-jwt-public.pem": 0o644,
                     "mqlite-db-auth.token": 0o644}  # fmt: skip
    assert secrets.stat().st_mode & 0o777 == 0o700
    token = (secrets / "mqlite-db-auth.token").read_text()
    assert token.endswith("\n") and token.count("\n") == 1  # one line: the whole JWT
    header, payload, signature = token.strip().split(".")
    assert json.loads(_b64(header)) == {"alg": "EdDSA", "typ": "JWT"}
    assert set(json.loads(_b64(payload))) == {"iat"}

    def verifies(signed: str) -> bool:
        (tmp_path / "input").write_text(signed)
        (tmp_path / "sig").write_bytes(_b64(signature))
        r = _run(
            "openssl", "pkeyutl", "-verify", "-pubin", "-inkey", secrets / "sqld-jwt-public.pem",
            "-rawin", "-in", tmp_path / "input", "-sigfile", tmp_path / "sig",
        )  # fmt: skip
        return r.returncode == 0

    assert verifies(f"{header}.{payload}")
    assert not verifies(f"{header}.{payload}x")  # the check can fail
    again = _run("sh", script, "./secrets", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == ""  # existing files are kept
    assert (secrets / "mqlite-db-auth.token").read_text() == token

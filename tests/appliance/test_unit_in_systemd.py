"""deploy/systemd under REAL systemd (PID 1 of a podman container, shared OPS-TOOLING §5):
the hardened unit starts and serves with its token from LoadCredential, a SIGKILL is
answered by Restart=on-failure, and the backup timer's service leaves verified snapshots
and prunes the old ones. The broker is the image's own venv (/opt/mqlite)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from appliance_support import REPO, inspect, name, podman, wait_for

UNITS = REPO / "deploy" / "systemd"
SYSTEMD_IMAGE = "localhost/mqlite-standin/systemd-broker:test"
TOKEN = "mqk_systemd_" + "e" * 40
CONTAINERFILE = """\
FROM docker.io/library/python:3.11-slim-bookworm
# systemd first: this layer stays cached while the broker image changes.
RUN apt-get update && apt-get install -y --no-install-recommends systemd systemd-sysv \\
 && rm -rf /var/lib/apt/lists/*
COPY --from={image} /opt/mqlite /opt/mqlite
COPY mqlite.service mqlite-backup.service mqlite-backup.timer /etc/systemd/system/
COPY mqlite-backup /usr/local/libexec/mqlite-backup
RUN systemctl enable mqlite.service mqlite-backup.timer
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT ["/sbin/init"]
"""


def sh(container: str, script: str, *, check: bool = True) -> str:
    return podman("exec", container, "sh", "-c", script, check=check)


def show(container: str, unit: str, prop: str) -> str:
    return sh(container, f"systemctl show -p {prop} --value {unit}").strip()


def healthz(container: str) -> bool:
    code = "import urllib.request as u; print(u.urlopen('http://127.0.0.1:6754/healthz').read())"
    return sh(container, f'python3 -c "{code}"', check=False).strip() == "b'ok'"


@pytest.fixture(scope="module")
def booted(image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    ctx = tmp_path_factory.mktemp("systemd-image")
    for f in ("mqlite.service", "mqlite-backup.service", "mqlite-backup.timer", "mqlite-backup"):
        shutil.copy(UNITS / f, ctx / f)
    (ctx / "Containerfile").write_text(CONTAINERFILE.format(image=image))
    podman("build", "--pull=never", "--format", "docker", "-q", "-t", SYSTEMD_IMAGE, str(ctx),
           timeout=900)  # fmt: skip
    tokens = ctx / "tokens"
    tokens.write_text(TOKEN + "\n")
    tokens.chmod(0o600)  # root's file: systemd reads it, the service gets its own copy
    container = name("systemd")
    podman("run", "-d", "--name", container, "--systemd=always",
           "-v", f"{tokens}:/etc/mqlite/tokens:ro", SYSTEMD_IMAGE)  # fmt: skip
    try:
        wait_for("mqlite.service active", lambda: show(container, "mqlite", "ActiveState")
                 == "active" and healthz(container), 90)  # fmt: skip
        yield container
    finally:
        podman("rm", "-f", "-t", "0", container, check=False)


def test_unit_serves_as_a_dynamic_user_with_its_credential(booted: str) -> None:
    pid = show(booted, "mqlite", "MainPID")
    uid = sh(booted, f"awk '/^Uid:/{{print $2}}' /proc/{pid}/status").strip()
    assert uid != "0" and int(uid) > 0
    # The hardening took effect in the kernel, not only in the unit's text.
    status = sh(booted, f"grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/{pid}/status").split()
    facts = dict(zip(status[::2], status[1::2], strict=True))
    assert facts == {"NoNewPrivs:": "1", "Seccomp:": "2", "CapEff:": "0000000000000000"}
    env = f"MQLITE_ENDPOINT=http://127.0.0.1:6754 MQLITE_TOKEN={TOKEN}"
    out = sh(booted, f"{env} /opt/mqlite/bin/mqlite create-queue systemd-q && "
                     f"{env} /opt/mqlite/bin/mqlite send systemd-q from-systemd")  # fmt: skip
    assert "sent systemd-q" in out
    wrong = sh(booted, "MQLITE_ENDPOINT=http://127.0.0.1:6754 MQLITE_TOKEN=mqk_wrong "
                       "/opt/mqlite/bin/mqlite status 2>&1", check=False)  # fmt: skip
    assert "unauthenticated" in wrong
    journal = sh(booted, "journalctl -u mqlite --no-pager -o cat")
    assert TOKEN not in journal and "generated administrator token" not in journal


def test_sigkill_is_answered_by_restart_on_failure(booted: str) -> None:
    before = int(show(booted, "mqlite", "NRestarts"))
    old_pid = show(booted, "mqlite", "MainPID")
    sh(booted, "systemctl kill -s KILL mqlite")
    wait_for("a restart", lambda: int(show(booted, "mqlite", "NRestarts")) == before + 1)
    wait_for("active again", lambda: show(booted, "mqlite", "ActiveState") == "active"
             and healthz(booted))  # fmt: skip
    assert show(booted, "mqlite", "MainPID") != old_pid


def test_backup_timer_service_makes_verified_snapshots_and_prunes(booted: str) -> None:
    assert sh(booted, "systemctl is-enabled mqlite-backup.timer").strip() == "enabled"
    assert sh(booted, "systemctl is-active mqlite-backup.timer").strip() == "active"
    # Retention is changed the documented way: a drop-in, then daemon-reload.
    sh(
        booted,
        "mkdir -p /etc/systemd/system/mqlite-backup.service.d && printf "
        "'[Service]\\nEnvironment=MQLITE_BACKUP_KEEP=2\\n' > "
        "/etc/systemd/system/mqlite-backup.service.d/keep.conf && systemctl daemon-reload",
    )
    for _ in range(3):  # the broker keeps running: an online snapshot
        sh(booted, "systemctl start mqlite-backup.service")
        assert show(booted, "mqlite-backup", "Result") == "success"
    snaps = sh(booted, "ls /var/lib/mqlite-backup/").split()
    dbs = sorted(s for s in snaps if s.endswith(".db"))
    assert len(dbs) == 2 and sorted(snaps) == sorted(dbs + [d + ".sha256" for d in dbs])
    journal = sh(booted, "journalctl -u mqlite-backup --no-pager -o cat")
    assert journal.count("integrity ok") == 3 and journal.count("pruned ") == 1
    out = sh(booted, f"/opt/mqlite/bin/mqlite restore /var/lib/mqlite-backup/{dbs[-1]} "
                     "--data-dir /tmp/restored")  # fmt: skip
    assert "1 message(s)" in out  # the message sent by the first test, verified
    assert inspect(booted)["State"]["Running"]

"""The container tier: stand-in base images (built once per machine, ops/ci/
standin-images.sh), the real Dockerfile built once per session, a check that names resolve
inside a podman network before any compose stack starts, and cleanup of every container,
volume and network a test created (by this run's name prefix).

Each step that depends on state an earlier run may have left (stand-in images, the
network backend) says in one line what it does, in the CI log too (not only with -s)."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator

import pytest
from appliance_support import IMAGE, PREFIX, REPO, SBOM, podman, podman_env

ROOTFS = "localhost/mqlite-standin/bookworm:latest"  # ops/ci/standin-images.sh


def say(config: pytest.Config, line: str) -> None:
    """One line in the terminal and the CI log, past pytest's capture of the fixture."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        reporter.write_line(f"appliance: {line}")


@pytest.fixture(scope="session")
def standins(pytestconfig: pytest.Config) -> None:
    """The upstream base images, rebuilt under their names from Debian where missing."""
    say(
        pytestconfig,
        "stand-in base images: building any that are missing (ops/ci/standin-images.sh)",
    )
    subprocess.run(
        [str(REPO / "ops" / "ci" / "standin-images.sh")], env=podman_env(), check=True, timeout=900
    )


@pytest.fixture(scope="session")
def image(standins: None, pytestconfig: pytest.Config) -> Iterator[str]:
    """The image of the real Dockerfile, built by the real ``make image`` (labels, SBOM;
    ``--pull=never``: on the stand-in bases; podman's docker format keeps HEALTHCHECK)."""
    started = time.monotonic()
    built = subprocess.run(
        ["make", "-s", "image", "ENGINE=podman", f"IMAGE={IMAGE}", "IMAGE_FLAGS=--pull=never",
         f"SBOM={SBOM}"],
        cwd=REPO, env=podman_env(), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    say(pytestconfig, f"built {IMAGE} by `make image` in {time.monotonic() - started:.1f} s")
    try:
        yield IMAGE
    finally:
        _remove_leftovers()


@pytest.fixture(scope="session")
def network_dns(standins: None, pytestconfig: pytest.Config) -> str:
    """Compose services reach each other by name: checked once, with two containers on a
    fresh network, before a stack whose timeouts would only say "no such host" later.
    Fails in one line naming the backend and the fix. Returns the backend's name."""
    backend = podman("info", "--format", "{{.Host.NetworkBackend}}").strip()
    say(pytestconfig, f"checking that names resolve inside a podman network (backend {backend})")
    net, server, client = f"{PREFIX}-dnscheck", f"{PREFIX}-dns-server", f"{PREFIX}-dns-client"
    podman("network", "create", net)
    try:
        dns = podman("network", "inspect", "--format", "{{.DNSEnabled}}", net).strip()
        podman("run", "-d", "--rm", "--name", server, "--network", net, ROOTFS, "sleep", "60")
        resolved = ""
        for _ in range(25):  # aardvark-dns learns a new container within a moment
            r = subprocess.run(
                ["podman", "run", "--rm", "--name", client, "--network", net, ROOTFS,
                 "getent", "hosts", server],
                env=podman_env(), capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            resolved = r.stdout.strip()
            if resolved:
                break
            time.sleep(0.2)
    finally:
        podman("rm", "-f", "-t", "0", server, client, check=False)
        podman("network", "rm", "-f", net, check=False)
    if not resolved:
        pytest.fail(
            f"DNS does not work inside a podman network (backend {backend}, dns_enabled "
            f"{dns}): compose services cannot resolve each other; install netavark and "
            'aardvark-dns (ops/ci/install-deps.sh) and keep network_backend = "netavark" '
            "in ops/ci/containers.conf",
            pytrace=False,
        )
    return backend


def _remove_leftovers() -> None:
    names = podman("ps", "-a", "--format", "{{.Names}}", "--filter", f"name={PREFIX}").split()
    if names:
        podman("rm", "-f", "-t", "0", *names, check=False)
    vols = podman("volume", "ls", "--format", "{{.Name}}", "--filter", f"name={PREFIX}").split()
    if vols:
        podman("volume", "rm", "-f", *vols, check=False)

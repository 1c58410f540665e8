"""The container tier: stand-in base images (built once per machine, ops/ci/
standin-images.sh), the real Dockerfile built once per session, and cleanup of every
container and volume a test created (by this run's name prefix)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
from appliance_support import IMAGE, PREFIX, REPO, podman, podman_env


@pytest.fixture(scope="session")
def image() -> Iterator[str]:
    """The image of the real Dockerfile (``--pull=never``: on the stand-in bases; docker
    format, because the OCI format drops HEALTHCHECK)."""
    subprocess.run(
        [str(REPO / "ops" / "ci" / "standin-images.sh")], env=podman_env(), check=True, timeout=900
    )
    started = time.monotonic()
    podman("build", "--pull=never", "--format", "docker", "-q", "-t", IMAGE, str(REPO), timeout=900)
    print(f"image built in {time.monotonic() - started:.1f} s")
    try:
        yield IMAGE
    finally:
        _remove_leftovers()


def _remove_leftovers() -> None:
    names = podman("ps", "-a", "--format", "{{.Names}}", "--filter", f"name={PREFIX}").split()
    if names:
        podman("rm", "-f", "-t", "0", *names, check=False)
    vols = podman("volume", "ls", "--format", "{{.Name}}", "--filter", f"name={PREFIX}").split()
    if vols:
        podman("volume", "rm", "-f", *vols, check=False)

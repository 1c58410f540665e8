"""hadolint on the Dockerfile at the project's threshold (warning), plus the image rules
that hadolint does not know: no curl, no pip cache, fixed non-root uid."""

from __future__ import annotations

from pathlib import Path

from packaging_support import REPO, VENV_BIN, run

HADOLINT = VENV_BIN / "hadolint"


def hadolint(dockerfile: Path) -> tuple[int, str]:
    r = run(HADOLINT, "--no-color", "--config", REPO / ".hadolint.yaml", dockerfile)
    return r.returncode, r.stdout + r.stderr


def test_dockerfile_passes_hadolint_at_warning() -> None:
    rc, out = hadolint(REPO / "Dockerfile")
    assert rc == 0, out


def test_the_threshold_catches_a_warning(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN cd /tmp && pip install mqlite\n")
    rc, out = hadolint(bad)
    assert rc == 1 and "DL3007" in out and "DL3003" in out, out


def test_runtime_stage_has_no_build_tools_and_a_python_healthcheck() -> None:
    text = (REPO / "Dockerfile").read_text()
    runtime = text.rsplit("\nFROM ", 1)[1]
    assert "apt-get" not in runtime and "pip install" not in runtime
    assert "curl" not in text.replace("no curl", "")
    health = next(ln for ln in runtime.splitlines() if "CMD [" in ln)
    assert '"python"' in health and "/healthz" in health

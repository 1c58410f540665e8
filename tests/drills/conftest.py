"""The drills tier: ops/drills/* run as operator tools (real processes, real files), and
their check functions fed broken evidence (helpers in drills_support.py). The drills'
modules import each other by bare name, so ops/drills goes on sys.path here, before any
test module of this directory is imported."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "ops" / "drills"))

"""The transport seam is typed (issue 27): mypy sees a wrong argument passed to an engine
verb through ``ctx.call``, a misused result, a handler bound to another route's types,
and a reach into the engine's plumbing from a handler. Proven on planted mistakes: mypy
(the project's strict configuration) must report each one, on its line."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PLANTED = textwrap.dedent(
    """
    from mqlite import wire as w
    from mqlite.server.context import Context, bind


    async def wrong_argument(ctx: Context, req: w.SettleRequest) -> w.SettleResponse:
        await ctx.call(ctx.engine.complete, req.queue, "seven", req.lock_token)  # line 7
        return w.SettleResponse()


    async def wrong_result(ctx: Context, req: w.MetricsRequest) -> w.MetricsResponse:
        total: int = await ctx.call(ctx.engine.stats, req.queue)  # line 12
        return w.MetricsResponse()


    async def into_the_store(ctx: Context, req: w.MetricsRequest) -> w.MetricsResponse:
        ctx.engine.store.close()  # line 17
        return w.MetricsResponse()


    MISMATCHED = bind(w.STATS, wrong_argument)  # line 21
    """
)


def test_mypy_reports_each_planted_misuse_of_the_seam(tmp_path: Path) -> None:
    probe = tmp_path / "seam_probe.py"
    probe.write_text(PLANTED, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", str(probe)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = {int(m) for m in re.findall(r"seam_probe\.py:(\d+): error", done.stdout)}
    assert lines == {7, 12, 17, 21}, done.stdout

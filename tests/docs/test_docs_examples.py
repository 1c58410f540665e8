"""Every code block of README.md and docs/ runs as written (issue 9: "a doc cannot drift
from the code again"). How each kind of block runs, and how a block that cannot run says
so, is in ``docs_support``; ``docs_session`` runs the shell and python blocks. A new page
under docs/ is picked up without touching this file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_session import run_session
from docs_support import Block, check_blocks, check_expr, check_json, pages, parse, rel


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_every_example_of_the_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    problems = check_blocks(page)
    assert not problems, "\n".join(problems)
    blocks, _ = parse(page)
    for block in blocks:
        if block.kind == "json":
            check_json(block)
        elif block.kind == "expr":
            check_expr(block)
    outcome = run_session(page, blocks, tmp_path)
    assert outcome.ok, (
        f"the example at {outcome.failed_at.where if outcome.failed_at else rel(page)} "
        f"failed; the session's output ends with:\n{outcome.output[-4000:]}"
    )


BROKEN_PAGE = """\
# A page with mistakes

```bash
echo fine
```

```text
an unmarked block of a kind the test cannot run
```

<!-- not-run: -->
```bash
echo a marker without a reason
```

```bash
mqlite no-such-command
echo never reached
```
"""


def test_the_checks_catch_a_broken_page(tmp_path: Path) -> None:
    """The machinery itself fails where a reader would: an unknown kind, a marker without
    a reason, and a command that fails, each named by its line."""
    page = tmp_path / "broken.md"
    page.write_text(BROKEN_PAGE)
    problems = check_blocks(page)
    assert any(p.startswith(f"{page}:7: ```text is not a kind") for p in problems), problems
    assert any(p.startswith(f"{page}:11: <!-- not-run: --> needs a reason") for p in problems)
    blocks, _ = parse(page)
    outcome = run_session(page, blocks, tmp_path / "session")
    assert not outcome.ok and outcome.failed_at is not None
    assert outcome.failed_at.line == 16
    assert "fine" in outcome.output and "invalid choice: 'no-such-command'" in outcome.output
    assert "never reached" not in outcome.output


def test_json_and_expr_blocks_are_checked(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    check_json(Block(page, 1, "json", '{"a": 1}\n'))
    check_json(Block(page, 1, "json", '{"a": 1}\n{"b": 2}\n'))  # JSON lines
    with pytest.raises(AssertionError, match=r"page.md:3: not JSON"):
        check_json(Block(page, 1, "json", '{"a": 1}\n{"b": \n'))
    check_expr(Block(page, 1, "expr", 'subject == "a"   // a comment\n\n'))
    with pytest.raises(AssertionError, match=r"page.md:3: 'subject ==': filter: unexpected"):
        check_expr(Block(page, 1, "expr", 'subject == "a"\nsubject ==\n'))


SERVES = """\
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""
QUITS = 'print("something else")\n'


@pytest.mark.parametrize(("program", "ok"), [(SERVES, True), (QUITS, False)])
def test_a_long_running_example_runs_until_its_output_then_sigterm(
    tmp_path: Path, program: str, ok: bool
) -> None:
    """Stopped by SIGTERM once it printed the awaited text, it must exit 0; a program
    that ends without printing it fails the page."""
    page = tmp_path / "page.md"
    page.write_text("<!-- run-until-output: ready -->\n```python\n" + program + "```\n")
    assert check_blocks(page) == []
    blocks, _ = parse(page)
    outcome = run_session(page, blocks, tmp_path / "session")
    assert outcome.ok is ok, outcome.output

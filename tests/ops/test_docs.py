"""docs/observability.md and the alert runbooks in docs/operations.md: links stay inside the
repository and resolve (files and heading anchors); every shell block either runs here,
from the repository root, or says why not with ``<!-- not-run: reason -->`` above it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ops_support import (
    OBSERVABILITY_DOC,
    OPERATIONS_DOC,
    REPO,
    github_anchor,
    headings,
    run,
)

DOCS = [OBSERVABILITY_DOC, OPERATIONS_DOC]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\s*$")
NOT_RUN = re.compile(r"^<!-- not-run: (\S.*\S) -->$")


def links(doc: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
    return LINK.findall(text)


def shell_blocks(doc: Path) -> list[tuple[int, str, str | None]]:
    """(line, code, not-run reason or None) of every sh/bash block."""
    lines = doc.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m and m.group(1):
            start, lang = i, m.group(1)
            i += 1
            body = []
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if lang in ("sh", "bash", "shell"):
                prev = lines[start - 1] if start else ""
                reason = NOT_RUN.match(prev)
                out.append((start + 1, "\n".join(body), reason.group(1) if reason else None))
        i += 1
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_links_stay_in_the_repository_and_resolve(doc: Path) -> None:
    assert links(doc), "no links found: the pattern is broken"
    for link in links(doc):
        assert not re.match(r"^[a-z]+:|^//", link), f"{doc.name}: external link {link}"
        path, _, fragment = link.partition("#")
        target = (doc.parent / path).resolve() if path else doc
        assert target.exists(), f"{doc.name}: {link} -> {target} does not exist"
        assert REPO in target.parents or target == REPO, f"{doc.name}: {link} leaves the repo"
        if fragment:
            assert target.suffix == ".md", f"{doc.name}: anchor into a non-Markdown file: {link}"
            anchors = {github_anchor(h) for _, h in headings(target.read_text())}
            assert fragment in anchors, f"{doc.name}: no heading for #{fragment} in {target.name}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_shell_blocks_run_or_say_why_not(doc: Path, debian_tools: dict[str, str]) -> None:
    for line, code, reason in shell_blocks(doc):
        if reason is not None:
            continue
        r = run(["bash", "-euo", "pipefail", "-c", code], cwd=REPO)
        assert r.returncode == 0, (
            f"{doc.name}:{line} failed ({r.returncode}):\n{code}\n{r.stdout}{r.stderr}"
        )


def test_observability_doc_runs_some_blocks() -> None:
    blocks = shell_blocks(OBSERVABILITY_DOC)
    assert any(reason is None for _, _, reason in blocks)
    assert any(reason is not None for _, _, reason in blocks)


def test_runbooks_are_one_section() -> None:
    level2 = [h for lvl, h in headings(OPERATIONS_DOC.read_text()) if lvl == 2]
    assert level2.count("Alert runbooks") == 1

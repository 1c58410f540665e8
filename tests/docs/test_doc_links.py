"""The docs link only to what a reader of the repository has (issue 9): a relative link
resolves inside the repository to a file that exists (and to a heading that exists, for
``page.md#anchor``); no absolute paths, and a ``../`` path, even in inline code, names a
file of the repository. Web URLs are fine."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_support import REPO, pages, rel
from markdown_it import MarkdownIt
from markdown_it.token import Token

WEB = re.compile(r"^(https?|mailto):", re.I)
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
UPWARD = re.compile(r"(?<![\w.])\.\./[\w./-]*")


def tokens(text: str) -> list[Token]:
    return MarkdownIt("commonmark").parse(text)


def inline_children(text: str) -> Iterator[Token]:
    for tok in tokens(text):
        yield from tok.children or ()


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lowercase, punctuation dropped, spaces to hyphens."""
    found: set[str] = set()
    toks = tokens(text)
    for i, tok in enumerate(toks):
        if tok.type == "heading_open":
            text = "".join(c.content for c in toks[i + 1].children or ())
            slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
            candidate, n = slug, 0
            while candidate in found:
                n += 1
                candidate = f"{slug}-{n}"
            found.add(candidate)
    return found


def link_problems(page: Path, text: str | None = None) -> list[str]:
    """What is wrong with the links of ``page`` (its ``text``, if given, read as if it
    lived there)."""
    text = page.read_text() if text is None else text
    problems = []
    for child in inline_children(text):
        target = str(child.attrs.get("href") or child.attrs.get("src") or "")
        if child.type not in ("link_open", "image") or not target or WEB.match(target):
            continue
        where = f"{rel(page)}: {target}"
        if SCHEME.match(target) or target.startswith("/"):
            problems.append(f"{where}: not a relative link into the repository")
            continue
        path_text, _, anchor = target.partition("#")
        if not path_text:  # this page
            if anchor not in anchors(text):
                problems.append(f"{where}: no heading #{anchor} in {rel(page)}")
            continue
        file = (page.parent / path_text).resolve()
        if not file.is_relative_to(REPO):
            problems.append(f"{where}: outside the repository")
        elif not file.exists():
            problems.append(f"{where}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text()):
            problems.append(f"{where}: no heading #{anchor} in {rel(file)}")
    for child in inline_children(text):
        if child.type in ("text", "code_inline"):
            for match in UPWARD.finditer(child.content):
                named = match.group().rstrip(".")
                path = (page.parent / named).resolve()
                if not path.is_relative_to(REPO):
                    problems.append(f"{rel(page)}: {named}: a path outside the repository")
                elif not path.exists():
                    problems.append(f"{rel(page)}: {named}: no such file")
    return problems


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_links_stay_inside_the_repository(page: Path) -> None:
    problems = link_problems(page)
    assert not problems, "\n".join(problems)


def test_the_link_check_catches_escapes() -> None:
    text = (
        "[a](../../shared/x.md) [b](/etc/passwd) [c](missing.md) [d](http.md#no-such)\n"
        "[e](http.md#logs) [f](https://example.org) [g](#here) [h](#nowhere)\n"
        "see `../../shared/spec.md`, `../shared/spec.md` and [i](../README.md)\n"
        "\n## Here\n"
    )
    problems = link_problems(REPO / "docs" / "new-page.md", text)
    assert problems == [
        "docs/new-page.md: ../../shared/x.md: outside the repository",
        "docs/new-page.md: /etc/passwd: not a relative link into the repository",
        "docs/new-page.md: missing.md: no such file",
        "docs/new-page.md: http.md#no-such: no heading #no-such in docs/http.md",
        "docs/new-page.md: #nowhere: no heading #nowhere in docs/new-page.md",
        "docs/new-page.md: ../../shared/spec.md: a path outside the repository",
        "docs/new-page.md: ../shared/spec.md: no such file",
    ]

"""Every command in docs/deployment.md and docs/operations.md exists: make targets in the
Makefile, mqlite subcommands in the CLI, repository scripts on disk, other tools from a
known list. A block needing Docker, Fly, systemd or podman on the host carries a
``<!-- not-run: reason -->`` marker; each block without one names the test running it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from packaging_support import REPO

from mqlite.cli.main import build_parser

DOCS = [REPO / "docs" / "deployment.md", REPO / "docs" / "operations.md"]
HOST_TOOLS = {"docker", "fly", "systemctl", "journalctl", "podman"}  # need not-run
OTHER_TOOLS = {
    "caddy", "curl", "python3", "install", "mkdir", "printf", "mv", "cd", "umask",
}  # fmt: skip
# Blocks without a not-run marker, and the test that runs their commands.
EXERCISED = {
    "MQLITE_SITE=mq.example.com caddy validate": "tests/ops/test_caddy.py",
    "deploy/compose-secrets.sh ./secrets && deploy/sqld-secrets.sh": (
        "tests/appliance/test_compose_remote.py"
    ),
}
_BLOCK = re.compile(r"(<!-- not-run: (?P<why>[^>]+) -->\n)?```bash\n(?P<body>.*?)```", re.S)


def blocks() -> list[tuple[Path, str | None, str]]:
    out = []
    for doc in DOCS:
        for m in _BLOCK.finditer(doc.read_text()):
            out.append((doc, m.group("why"), m.group("body")))
    return out


def commands(body: str) -> list[list[str]]:
    """Each simple command as words, env assignments and comments dropped."""
    text = body.replace("\\\n", " ")
    cmds: list[list[str]] = []
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.commenters = "#"
        lexer.whitespace_split = True  # words split on blanks and operators only
        words: list[str] = []
        for token in [*lexer, ";"]:
            if token and set(token) <= set("&|;()<>"):
                if token in (">", "<", ">>"):
                    words.append(token)
                    continue
                while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
                    words.pop(0)
                if words:
                    cmds.append([w for i, w in enumerate(words) if not _redirect(words, i)])
                words = []
            else:
                words.append(token)
    return cmds


def _redirect(words: list[str], i: int) -> bool:
    """A redirection operator or its target (``> file``) is not an argument."""
    return words[i] in (">", "<", ">>") or (i > 0 and words[i - 1] in (">", "<", ">>"))


def _make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z-]*):", (REPO / "Makefile").read_text(), re.M))


def _mqlite_has(words: list[str]) -> bool:
    parser = build_parser()
    for word in words[1:]:
        subs = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        if not subs:
            return True
        choices = subs[0].choices  # type: ignore[attr-defined]
        if word not in choices:
            return False
        parser = choices[word]
    return True


def test_docs_have_command_blocks() -> None:
    assert len(blocks()) >= 10


@pytest.mark.parametrize(("doc", "why", "body"), blocks(), ids=lambda v: str(v)[:40])
def test_every_command_exists(doc: Path, why: str | None, body: str) -> None:
    cmds = commands(body)
    assert cmds, body
    for words in cmds:
        tool = words[0]
        if tool == "make":
            assert set(w for w in words[1:] if "=" not in w) <= _make_targets(), words
        elif tool == "mqlite" or tool.endswith("/mqlite"):
            assert _mqlite_has(words), words
        elif tool.startswith("/"):
            assert why, f"{doc.name}: {tool} is a host path: the block needs not-run"
        elif "/" in tool:
            path = REPO / tool
            assert path.is_file() and path.stat().st_mode & 0o111, words
        elif tool in HOST_TOOLS:
            assert why, f"{doc.name}: a block using {tool} needs <!-- not-run: reason -->"
        else:
            assert tool in OTHER_TOOLS, (doc.name, words)
    if why is None:
        first = body.strip().splitlines()[0]
        assert any(first.startswith(k) for k in EXERCISED), f"unmarked, untested: {first}"
        for test in (EXERCISED[k] for k in EXERCISED if first.startswith(k)):
            assert (REPO / test).is_file()

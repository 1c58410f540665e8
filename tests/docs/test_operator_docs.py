"""What an operator reads first (issue 31 item 6): the README leads to deployment,
replication and the container in three lines and claims no install that does not work;
the schema-migration rule is ONE statement, the same on every page that states it."""

from __future__ import annotations

import re

from docs_support import REPO, parse

README = REPO / "README.md"
MIGRATION_PAGES = ("docs/operations.md", "docs/embedded.md", "docs/cli.md")


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_readme_links_deployment_replication_and_the_container() -> None:
    text = README.read_text()
    assert "(docs/deployment.md)" in text and "(docs/replication.md)" in text
    blocks, _ = parse(README)
    (container,) = [b for b in blocks if "docker run" in b.code]
    assert len(container.code.strip().splitlines()) == 3
    assert "make image" in container.code  # the image it runs is built from the clone


def test_the_readme_does_not_offer_an_install_from_a_package_index() -> None:
    assert not re.search(r"pip install ['\"]?mqlite\b", README.read_text())


def test_schema_migrations_are_one_statement() -> None:
    statements = []
    for page in MIGRATION_PAGES:
        flat = _flat((REPO / page).read_text())
        found = re.findall(r"\*\*Schema migrations:\*\* .*?roll back\.", flat)
        assert len(found) == 1, page
        statements.append(found[0])
    assert len(set(statements)) == 1, statements
    everything = " ".join(_flat(p.read_text()) for p in [README, *(REPO / "docs").glob("*.md")])
    assert "no schema migrations" not in everything and "never migrates" not in everything

"""Tests: README.md, docs/

Every relative link of the README and the ``docs/`` pages points to a file that exists, and every
``#anchor`` to a heading of its page (GitHub's anchor rule: lower case, punctuation dropped, spaces to ``-``).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO_ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def pages() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    out = set()
    for title in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower()).replace(" ", "-")
        out.add(slug)
    return out


def dead_links(files: list[Path], root: Path = REPO_ROOT) -> list[str]:
    out = []
    for page in files:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                out.append(f"{page.relative_to(root)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                out.append(f"{page.relative_to(root)}: {target} (no heading '#{anchor}')")
    return out


def test_every_link_of_the_readme_and_docs_resolves():
    assert not dead_links(pages()), "\n".join(dead_links(pages()))


def test_a_dead_file_and_a_dead_anchor_are_found(tmp_path):
    (tmp_path / "a.md").write_text(
        "# Title\n\n## Who labels\n\n[ok](#who-labels) [bad](#no-good-match) [gone](b.md)\n"
    )
    assert [x.split(": ", 1)[1] for x in dead_links(sorted(tmp_path.glob("*.md")), tmp_path)] == [
        "#no-good-match (no heading '#no-good-match')",
        "b.md (no such file)",
    ]


def test_the_scale_page_stays_short():
    """docs/scale.md is the summary (≤ 250 lines); the logs' tables and the commands live in its appendix."""
    lines = (REPO_ROOT / "docs" / "scale.md").read_text().splitlines()
    assert len(lines) <= 250, f"docs/scale.md has {len(lines)} lines; move detail to docs/scale_tables.md"


def _walkthrough(title: str) -> str:
    """The README section that starts with the bold ``title`` and ends before the next paragraph that is not
    one of its numbered steps."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"**{title}**")
    end = re.compile(r"\n\n(?![\d ])").search(text, start)
    return text[start : end.start() if end else len(text)]


def test_the_readme_walkthroughs_name_files_and_names_that_exist():
    """ "How a drawing search travels" and "Add an encoder": every path they name exists, and every name
    they quote beside it (``Handlers.search_drawing``, ``create_encoder``, ``PAPER_AND_DEFAULT`` …) is
    defined in one of the files the same section names."""
    for title in ("How a drawing search travels", "Add an encoder"):
        section = _walkthrough(title)
        quoted = re.findall(r"`([^`]+)`", section)
        paths = [q for q in quoted if re.fullmatch(r"[\w./-]+\.(py|json)", q)]
        assert len(paths) >= 3, title
        missing = [p for p in paths if not (REPO_ROOT / p).exists()]
        assert not missing, (title, missing)
        source = "\n".join((REPO_ROOT / p).read_text(encoding="utf-8") for p in paths if p.endswith(".py"))
        names = [q.split(".")[-1] for q in quoted if re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_]\w*)?", q)]
        names = [n for n in names if n not in ("py", "json") and "_" in n or n[:1].isupper()]
        undefined = [
            n for n in names if not re.search(rf"^\s*(def|class)\s+{n}\b|^{n}\s*=|\"{n}\"", source, re.M)
        ]
        assert names and not undefined, (title, undefined)

"""The README and docs/ stay readable and connected: every relative link (and its #anchor) names
a file of this repository and a heading in it, and the README stays a short page for the person
who installs NISTChat (the details live in docs/)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README_MAX_LINES = 160

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`+[^`]*`+")


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a link or heading inside one is only an example)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        lines.append("" if fenced else line)
    return lines


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: link text kept, code marks dropped, lower case, every
    character but letters, digits, spaces, hyphens and underscores removed, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(page: Path, repo: Path = REPO) -> list[str]:
    """Each relative link of `page` that names no file inside `repo`, or no heading of the file."""
    problems = []
    for number, line in enumerate(prose_lines(page.read_text(encoding="utf-8")), 1):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:: not a file here
                continue
            where = f"{page.relative_to(repo)}:{number}: {target}"
            path_part, _, anchor = target.partition("#")
            file = (page.parent / path_part).resolve() if path_part else page
            if not file.is_relative_to(repo.resolve()):
                problems.append(f"{where} (outside the repository)")
            elif not file.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                problems.append(f"{where} (no heading #{anchor} in {file.name})")
    return problems


def test_every_relative_link_in_the_readme_and_docs_resolves():
    problems = [p for page in pages() for p in broken_links(page)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_readme_is_short():
    lines = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move details into docs/ (at most {README_MAX_LINES})"


def test_the_readme_links_every_page_in_docs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in sorted((REPO / "docs").glob("*.md")) if f"docs/{p.name}" not in readme]
    assert not missing, f"docs/ pages the README does not link: {missing}"


def test_the_checker_finds_a_missing_file_a_missing_heading_and_a_path_outside(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other page\n\n## The reader process\n", encoding="utf-8")
    page = tmp_path / "docs" / "page.md"
    page.write_text("# Page\n\n"
                    "[fine](other.md#the-reader-process) [self](#page) [web](https://example.org/x)\n"
                    "[gone](missing.md) [no heading](other.md#not-there) [out](../../elsewhere.md)\n"
                    "```\n[in a code block](ignored.md)\n```\n`[in code](ignored.md)`\n", encoding="utf-8")
    problems = broken_links(page, tmp_path)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "missing.md (no such file)", "other.md#not-there (no heading #not-there in other.md)",
        "../../elsewhere.md (outside the repository)"]


def test_anchors_follow_githubs_rule():
    assert slug("The newcomer benchmark (`scripts/bench_first_run.py`, 1.5B reader, 2026-12-01)") == \
        "the-newcomer-benchmark-scriptsbench_first_runpy-15b-reader-2026-12-01"
    assert slug("Audit: checking an answer from elsewhere") == "audit-checking-an-answer-from-elsewhere"

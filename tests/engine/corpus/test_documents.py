"""Reading documents: structure (headings, tables, figures, lists), hygiene, bad input, real files."""
from __future__ import annotations

import re

import pytest

from nistchat.engine.corpus.documents import DocumentError, parse_markdown, read_document

from tests.conftest import SHARED_CORPUS

FIXTURE = """\
# NIST AI 999-1 A Test Publication

**Published:** May 2030

NIST AI 999-1 | Page 3

## 1. Scope

This publication exists to test ingestion.[^1] It has several paragraphs.

12

## 1.1 Details

Details paragraph one.

### Purpose

Purpose text nested under 1.1.

## 2. Categories

The categories presented in Table 1 were derived from workshops.

**Table 1 Widget categories and definitions**

| Category | Definition |
| --- | --- |
| Alpha Widgets | Widgets that come first |
| Beta Widgets | Widgets that come second |

### Table GOVERN 9.9 A heading-style caption

|  |  |
| --- | --- |
| Action ID | Suggested Action |
| GV-9.9-001 | Do the first thing. |

### Figure 2 Widget lifecycle: how widgets move through stages.

![Widget lifecycle](../images/fig2.png)

> ### **Technical Description: Widget Lifecycle**
> **Summary:** A circular diagram of the widget lifecycle.
>
> *   **Plan:** Widgets are planned.
> *   **Build:** Widgets are built.
>     *   **Test:** Built widgets are tested.
>
> **Keywords:** Widgets, Lifecycle, Planning.

The lifecycle has the following stages:

- Plan the widget
- Build the widget
- Retire the widget

## Table of Contents

1. Scope .......... 1
2. Categories .......... 4

## 3. After The Contents

Real content after the table of contents.

## References

- [1] A. Author. A paper about widgets. In Widget Conference, 2021.
- [2] B. Author. Another paper. In Widget Journal, 2022.
- [3] C. Author. A third paper. In Widget Workshop, 2023.

### Footnotes

[^1]: A footnote that explains something useful about widgets.
[^2]: https://example.org/only-a-link
"""


@pytest.fixture(scope="module")
def fixture_doc():
    return parse_markdown(FIXTURE, doc_id="NIST.AI.999-1", source="NIST.AI.999-1.md")


def blocks_of(doc, kind):
    return [b for b in doc.blocks if b.kind == kind]


def test_title_and_heading_paths(fixture_doc):
    assert fixture_doc.title == "NIST AI 999-1 A Test Publication"
    purpose = next(b for b in fixture_doc.blocks if b.text.startswith("Purpose text"))
    assert purpose.heading_path == ["1. Scope", "1.1 Details", "Purpose"]
    categories = next(b for b in fixture_doc.blocks if b.text.startswith("The categories presented"))
    assert categories.heading_path == ["2. Categories"]


def test_boilerplate_is_stripped(fixture_doc):
    texts = [b.text for b in fixture_doc.blocks]
    joined = "\n".join(texts)
    assert "Page 3" not in joined and "![" not in joined and "[^1]" not in joined
    assert not any(t.strip() == "12" for t in texts)
    assert "..........." not in joined and "Table of Contents" not in joined
    assert "Real content after the table of contents." in texts  # the section after the TOC survives
    assert "A. Author" not in joined and "Widget Conference" not in joined  # reference list dropped
    assert any("A footnote that explains" in t for t in texts)
    assert "only-a-link" not in joined


def test_bold_caption_table_is_one_block(fixture_doc):
    table = blocks_of(fixture_doc, "table")[0]
    assert table.caption == "Table 1 Widget categories and definitions"
    assert table.header == ["Category", "Definition"]
    assert [r[0] for r in table.rows] == ["Alpha Widgets", "Beta Widgets"]
    assert table.text.startswith("Table 1 Widget categories") and "Beta Widgets" in table.text


def test_heading_caption_table_with_empty_header_row(fixture_doc):
    table = blocks_of(fixture_doc, "table")[1]
    assert table.caption.startswith("Table GOVERN 9.9")
    assert table.header == ["Action ID", "Suggested Action"]  # the first real row becomes the header
    assert table.rows == [["GV-9.9-001", "Do the first thing."]]
    assert table.heading_path == ["2. Categories"]  # a table caption is not a section heading


def test_technical_description_is_one_figure_block_with_caption(fixture_doc):
    figures = blocks_of(fixture_doc, "figure")
    assert len(figures) == 1
    fig = figures[0]
    assert fig.caption.startswith("Figure 2 Widget lifecycle")
    for part in ("Figure 2 Widget lifecycle", "Technical Description: Widget Lifecycle", "Summary:",
                 "Plan:", "Test:", "Keywords: Widgets"):
        assert part in fig.text
    assert "![" not in fig.text and "**" not in fig.text
    assert not any(b.text.startswith("Figure 2") for b in blocks_of(fixture_doc, "prose"))


def test_list_keeps_its_intro(fixture_doc):
    lst = next(b for b in blocks_of(fixture_doc, "list") if "Retire the widget" in b.text)
    assert lst.text.startswith("The lifecycle has the following stages:")
    assert lst.caption == "The lifecycle has the following stages:"
    assert all(item in lst.text for item in ("Plan the widget", "Build the widget", "Retire the widget"))
    assert not any(b.text == "The lifecycle has the following stages:" for b in blocks_of(fixture_doc, "prose"))


def test_long_paragraph_ending_with_colon_lends_its_last_sentence():
    long_intro = " ".join(["Background sentence number %d is here." % i for i in range(40)])
    doc = parse_markdown(f"# T\n\n## 1. S\n\n{long_intro} The groups are:\n\n- one\n- two\n", doc_id="X")
    prose, lst = doc.blocks
    assert prose.kind == "prose" and prose.text.endswith("The groups are:")
    # "The groups are:" alone names nothing: earlier sentences join it until ~15 words (at most 3)
    assert lst.caption == "Background sentence number 38 is here. Background sentence number 39 is here. The groups are:"
    assert lst.kind == "list" and lst.text.startswith(lst.caption + "\n- one")


def test_long_lead_in_sentence_is_taken_alone():
    long_intro = " ".join(["Background sentence number %d is here." % i for i in range(40)])
    last = "The plan sorts the many candidate topics for standards work into the following three groups:"
    doc = parse_markdown(f"# T\n\n## 1. S\n\n{long_intro} {last}\n\n- one\n- two\n", doc_id="X")
    assert doc.blocks[1].caption == last


# ---------------------------------------------------------------------------------------------
# Bad input: one clear DocumentError per file

@pytest.mark.parametrize("name,content,reason", [
    ("empty.md", b"", "empty"),
    ("blank.md", b"  \n\n\t\n", "empty"),
    ("junk.md", bytes(range(256)) * 20, "binary"),
    ("latin1.md", "caf\xe9 na\xefve text".encode("latin-1"), "UTF-8"),
    ("broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage garbage\n", "PDF"),
    ("notapdf.pdf", b"hello, I am plain text pretending to be a PDF", "not a PDF"),
    ("images.md", b"![a](a.png)\n\n![b](b.png)\n\n12\n", "no readable text"),
    ("notes.docx", b"PK\x03\x04 something", "unsupported"),
])
def test_bad_input_raises_document_error(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DocumentError) as info:
        read_document(path)
    assert reason.lower() in str(info.value).lower()
    assert info.value.path == path


# ---------------------------------------------------------------------------------------------
# The real corpus

MARKDOWN = SHARED_CORPUS / "markdown"
AUTO = SHARED_CORPUS / "auto-converted"
PDF = SHARED_CORPUS / "pdf" / "NIST.AI.100-1.pdf"

needs_corpus = pytest.mark.skipif(not MARKDOWN.is_dir(), reason="shared corpus not present")


@needs_corpus
def test_every_technical_description_is_one_figure_block():
    total = 0
    for path in sorted(MARKDOWN.glob("*.md")):
        expected = len(re.findall(r"^> ### \*\*Technical Description", path.read_text(encoding="utf-8"), re.M))
        figures = blocks_of(read_document(path), "figure")
        assert len(figures) == expected, path.name
        assert all(f.text.count("Technical Description") == 1 for f in figures)
        total += expected
    assert total == 17  # 9 + 3 + 3 + 2 in the cleaned corpus


@needs_corpus
def test_real_monitoring_table_is_one_block():
    doc = read_document(MARKDOWN / "NIST.AI.800-4.md")
    table = next(b for b in blocks_of(doc, "table") if "Monitoring categories and definitions" in b.caption)
    assert len(table.rows) == 6
    for category in ("Functionality", "Operational", "Human Factors", "Security", "Compliance", "Large-Scale Impacts"):
        assert category in table.text


@needs_corpus
def test_auto_converted_blocks_are_clean():
    header = re.compile(r"^(NIST (AI|SP) [\w.-]+.*\|\s*Page \d+|Page \d+|\d{1,3})$")
    for path in sorted(AUTO.glob("*.md")):
        doc = read_document(path)
        assert doc.blocks, path.name
        for b in doc.blocks:
            assert "![" not in b.text, (path.name, b.text[:80])
            assert not header.match(b.text.strip()), (path.name, b.text)
        assert not any(re.search(r"\.{6,}", b.text) for b in doc.blocks), path.name  # no TOC leaders


@needs_corpus
def test_pdf_blocks_have_pages_and_no_running_header():
    doc = read_document(PDF)
    pages = [b.page for b in doc.blocks]
    assert all(isinstance(p, int) and 1 <= p <= 48 for p in pages)
    assert pages == sorted(pages) and len(set(pages)) > 30
    assert not any(b.text.strip().startswith("NIST AI 100-1 AI RMF 1.0") for b in doc.blocks)
    assert not any(re.fullmatch(r"(Page )?\d{1,2}", b.text.strip()) for b in doc.blocks)
    sections = {" > ".join(b.heading_path) for b in doc.blocks}
    assert any(s.endswith("5.1 Govern") for s in sections)
    assert any("3.2 Safe" in s for s in sections)
    govern = next(b for b in doc.blocks if b.heading_path and b.heading_path[-1] == "5.1 Govern")
    assert 20 <= govern.page <= 30

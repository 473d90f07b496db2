"""Chunking: each parent kind on small fixtures, sizes, links, ids; then the real corpus (no embedder)."""
from __future__ import annotations

import re

import pytest

from nistchat.engine.corpus.chunking import ChunkConfig, chunk_document
from nistchat.engine.corpus.documents import parse_markdown, read_document
from nistchat.engine.text import estimate_tokens
from nistchat.engine.types import Block, Document

from tests.conftest import SHARED_CORPUS
from .test_documents import FIXTURE

CONTENT = re.compile(r"^[^\n]*\n", re.S)  # child text = "<doc> | <section>\n" + content


def content_of(child) -> str:
    return CONTENT.sub("", child.text, count=1)


def doc_of(blocks: list[Block], doc_id: str = "NIST.AI.999-1") -> Document:
    return Document(doc_id=doc_id, title="Test", source="t.md", sha256="0", blocks=blocks)


def sentence_paragraph(n: int, tag: str) -> str:
    return " ".join(f"Sentence {i} of paragraph {tag} talks about widget governance and risk." for i in range(n))


def test_prose_is_packed_per_section_within_budget():
    cfg = ChunkConfig(parent_tokens=300)
    blocks = [Block("prose", sentence_paragraph(8, f"p{i}"), ["1. Scope"]) for i in range(6)]
    blocks.append(Block("prose", "Other section text that is long enough to be a real child here.", ["2. Other"]))
    parents, children = chunk_document(doc_of(blocks), cfg)
    scope = [p for p in parents if p.heading_path == ["1. Scope"]]
    assert len(scope) >= 3
    assert all(estimate_tokens(p.text, by="words") <= cfg.parent_tokens for p in scope)
    assert all(p.kind == "prose" for p in parents)
    assert parents[-1].heading_path == ["2. Other"]  # never merged across sections
    for a, b in zip(parents, parents[1:]):
        assert a.next_id == b.id and b.prev_id == a.id
    assert parents[0].prev_id is None and parents[-1].next_id is None


def test_oversized_paragraph_is_split_on_sentences_and_children_overlap():
    cfg = ChunkConfig(parent_tokens=250, child_words=60, child_overlap_words=20)
    parents, children = chunk_document(doc_of([Block("prose", sentence_paragraph(40, "big"), ["1. S"])]), cfg)
    assert len(parents) > 1 and all(estimate_tokens(p.text, by="words") <= cfg.parent_tokens for p in parents)
    assert all(p.text.rstrip().endswith(".") for p in parents)  # cut between sentences
    first = [content_of(c) for c in children if c.parent_id == parents[0].id]
    assert len(first) >= 2
    assert all(40 <= len(t.split()) <= 120 for t in first[:-1])
    last_sentence_of_first = first[0].split(". ")[-1]
    assert last_sentence_of_first in first[1]  # overlap


def test_table_is_one_parent_and_rows_carry_caption_and_header():
    doc = parse_markdown(FIXTURE, doc_id="NIST.AI.999-1")
    parents, children = chunk_document(doc)
    table = next(p for p in parents if p.kind == "table" and "Widget categories" in p.text)
    assert "Alpha Widgets" in table.text and "Beta Widgets" in table.text
    rows = [content_of(c) for c in children if c.parent_id == table.id]
    # overview: caption, then the section's own sentence referring to the table, columns, rows
    assert rows[0].startswith("Table 1 Widget categories and definitions. The categories presented in Table 1 "
                              "were derived from workshops. Columns: Category, Definition. Rows:")
    assert "Alpha Widgets" in rows[0] and "Beta Widgets" in rows[0]  # the overview names every row
    beta = next(r for r in rows[1:] if "Beta" in r)
    assert beta.startswith("Table 1 Widget categories and definitions | Category: Beta Widgets; Definition:")


def test_table_reference_sentence_must_name_this_table():
    rows = [["A", "alpha"], ["B", "beta"]]
    text = "Table 2 Letters\n| Key | Value |\n|---|---|\n| A | alpha |\n| B | beta |"
    prose = Block("prose", "Table 21 is elsewhere. Table 2.1 too. As Table 2 shows, letters differ.", ["3. L"])
    other = Block("prose", "Table 2 in another section does not count.", ["4. M"])
    table = Block("table", text, ["3. L"], caption="Table 2 Letters", header=["Key", "Value"], rows=rows)
    _, children = chunk_document(doc_of([prose, table, other]))
    overview = content_of(next(c for c in children if c.kind == "table"))
    assert overview.startswith("Table 2 Letters. As Table 2 shows, letters differ. Columns: Key, Value.")


def test_very_large_table_becomes_linked_segments_with_header():
    rows = [[f"R{i}", sentence_paragraph(3, f"row{i}")] for i in range(40)]
    text = "Table 7 Big\n| Key | Value |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
    block = Block("table", text, ["3. Big"], caption="Table 7 Big", header=["Key", "Value"], rows=rows)
    parents, children = chunk_document(doc_of([block]), ChunkConfig(table_tokens=600))
    assert len(parents) > 1
    ids = {p.id for p in parents}
    for p in parents:
        assert p.kind == "table"
        assert p.text.startswith("Table 7 Big (rows ") and "| Key | Value |" in p.text
        assert set(p.neighbours) == ids - {p.id}
    all_rows = "".join(p.text for p in parents)
    assert all(f"| R{i} |" in all_rows for i in range(40))


def test_figure_is_one_parent_with_summary_bullet_and_keyword_children():
    doc = parse_markdown(FIXTURE, doc_id="NIST.AI.999-1")
    parents, children = chunk_document(doc)
    figures = [p for p in parents if p.kind == "figure"]
    assert len(figures) == 1
    kids = [content_of(c) for c in children if c.parent_id == figures[0].id]
    assert kids[0].startswith("Figure 2 Widget lifecycle") and "Summary: A circular diagram" in kids[0]
    assert any("Plan:" in k and "Test:" in k for k in kids[1:])  # sub-bullet kept with its group
    assert kids[-1].startswith("Figure 2: Widget Lifecycle. Keywords:")
    assert all("Widget Lifecycle" in k or "Widget lifecycle" in k for k in kids)


def test_list_parent_and_children_keep_the_intro():
    items = "\n".join(f"- Item {i}: " + sentence_paragraph(2, f"i{i}") for i in range(12))
    doc = parse_markdown(f"# T\n\n## 4. Lists\n\nThe items are as follows:\n\n{items}\n", doc_id="NIST.AI.999-1")
    parents, children = chunk_document(doc)
    assert [p.kind for p in parents] == ["list"]
    assert parents[0].text.startswith("The items are as follows:\n- Item 0")
    kids = [content_of(c) for c in children]
    assert len(kids) > 1 and all(k.startswith("The items are as follows:") for k in kids)
    assert all(f"Item {i}:" in " ".join(kids) for i in range(12))
    # a list split over several children gets an overview child naming every item
    assert kids[0] == "The items are as follows: Items: " + "; ".join(f"Item {i}" for i in range(12))


def test_short_list_has_no_overview_child():
    doc = parse_markdown("# T\n\n## 4. Lists\n\nThe parts are:\n\n- one\n- two\n- three\n", doc_id="NIST.AI.999-1")
    _, children = chunk_document(doc)
    assert [content_of(c) for c in children] == ["The parts are: - one - two - three"]


def test_short_children_stay_out_of_bm25_and_prefix_names_doc_and_section():
    blocks = [Block("prose", "GOVERN 1:", ["5.1 Govern"]), Block("table", "x", ["5.1 Govern"])]
    blocks[1] = Block("list", "- a real list item that is long enough to count as content", ["5.2 Map"])
    parents, children = chunk_document(doc_of(blocks), ChunkConfig())
    short = next(c for c in children if content_of(c) == "GOVERN 1:")
    assert short.in_bm25 is False
    assert short.text.startswith("NIST AI 999-1 | 5.1 Govern\n")
    assert next(c for c in children if c.kind == "list").in_bm25 is True


def test_ids_are_deterministic_unique_and_slugged():
    doc_a = parse_markdown(FIXTURE, doc_id="NIST.AI.999-1")
    doc_b = parse_markdown(FIXTURE, doc_id="NIST.AI.999-1")
    pa, ca = chunk_document(doc_a)
    pb, cb = chunk_document(doc_b)
    assert [p.id for p in pa] == [p.id for p in pb] and [c.id for c in ca] == [c.id for c in cb]
    assert len({p.id for p in pa}) == len(pa) and len({c.id for c in ca}) == len(ca)
    assert all(re.fullmatch(r"nist-ai-999-1:[0-9a-f]{10}", p.id) for p in pa)
    assert all(c.id.startswith(c.parent_id + "-") for c in ca)
    parent_ids = {p.id for p in pa}
    assert all(c.parent_id in parent_ids for c in ca)


# ---------------------------------------------------------------------------------------------
# Real corpus, chunked without embedding

MARKDOWN = SHARED_CORPUS / "markdown"
needs_corpus = pytest.mark.skipif(not MARKDOWN.is_dir(), reason="shared corpus not present")
HEADER_ONLY = re.compile(r"^(NIST (AI|SP|Special Publication)\b[\w .:-]*(\|\s*Page \d+)?|Page \d+|\d{1,3}|[ivx]{1,5})$", re.I)


@needs_corpus
def test_real_monitoring_table_row_child_knows_its_table():
    parents, children = chunk_document(read_document(MARKDOWN / "NIST.AI.800-4.md"))
    table = [p for p in parents if p.kind == "table" and "Monitoring categories and definitions" in p.text]
    assert len(table) == 1
    row = next(c for c in children if c.parent_id == table[0].id and "Functionality Monitoring" in content_of(c)
               and "Operational" not in content_of(c))
    assert "Table 1 Monitoring categories and definitions" in row.text


@needs_corpus
@pytest.mark.parametrize("folder", ["markdown", "auto-converted"])
def test_real_children_are_never_boilerplate(folder):
    for path in sorted((SHARED_CORPUS / folder).glob("*.md")):
        parents, children = chunk_document(read_document(path))
        assert parents and children
        for c in children:
            content = content_of(c).strip()
            assert "![" not in c.text, (path.name, c.id)
            assert not HEADER_ONLY.match(content), (path.name, c.id, content)
            assert len(content) >= 10, (path.name, c.id, content)
        prose = [estimate_tokens(p.text, by="words") for p in parents if p.kind == "prose"]
        assert max(prose) <= ChunkConfig().parent_tokens


@needs_corpus
def test_real_pdf_parents_carry_pages():
    parents, children = chunk_document(read_document(SHARED_CORPUS / "pdf" / "NIST.AI.100-1.pdf"))
    assert len(parents) > 50
    assert all(isinstance(p.page, int) and 1 <= p.page <= 48 for p in parents)
    assert any(p.kind == "list" for p in parents)
    govern = next(p for p in parents if "The GOVERN function" in p.text)
    assert govern.kind == "list" and govern.heading_path[-1] == "5.1 Govern"

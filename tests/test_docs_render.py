"""The document viewer's renderer: Markdown from the index's parents to sanitised HTML, tables as
tables, the checker's matching sentence (or table row) marked, headings and contents in order."""
from __future__ import annotations

from nistchat.engine.corpus.catalog import DocEntry
from nistchat.engine.types import Parent
from nistchat.engine.verification.verify import best_matches
from nistchat.docs.render import marked_text, preview_text, render_document, to_html, units

TABLE = """Table 1: Monitoring categories
| Category | What is watched |
|---|---|
| Functional | Whether outputs stay correct after deployment |
| Operational | Uptime, latency and resource use of the serving system |"""


def make(pid, text, kind="prose", path=("1. Scope",)):
    return Parent(pid, "NIST.AI.999-9", "NIST AI 999-9 Guidance on Widget Assurance", list(path), kind, text)


def test_markup_in_a_document_is_shown_as_text_and_links_are_defused():
    html = str(to_html('Plain <script>alert(1)</script> <img src=x onerror=alert(1)> '
                       '[click](javascript:alert(1)) [ok](https://www.nist.gov/ "NIST")'))
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html
    assert "&lt;script&gt;" in html
    assert '<a href="https://www.nist.gov/"' in html and 'rel="noopener noreferrer"' in html


def test_a_table_passage_is_a_table_and_a_list_is_a_list():
    html = str(to_html(TABLE))
    assert "<table>" in html and "<th>Category</th>" in html and "<td>Functional</td>" in html
    assert "<p>Table 1: Monitoring categories</p>" in html
    listed = str(to_html("The checks are:\n- review before release\n- review every quarter"))
    assert "<ul>" in listed and "<li>review every quarter</li>" in listed


def test_the_matching_sentence_of_a_prose_passage_is_marked():
    p = make("p1", "Widgets are tested in a lab. Each widget is reviewed before release and again every "
                   "quarter. Reviews are logged.")
    html = str(to_html(marked_text(p, "Widgets are reviewed before release and every quarter [1].")))
    assert '<mark class="match">Each widget is reviewed before release and again every quarter.</mark>' in html
    assert html.count("<mark") == 1


def test_the_matching_row_of_a_table_is_marked_cell_by_cell_and_stays_a_row():
    p = make("t1", TABLE, "table")
    assert len(units(p)) == 2  # the body rows, not the header or the separator
    html = str(to_html(marked_text(p, "Operational monitoring covers uptime and latency.")))
    assert '<td><mark class="match">Operational</mark></td>' in html
    assert '<mark class="match">Uptime, latency and resource use of the serving system</mark>' in html
    assert "<td>Functional</td>" in html and html.count("<tr>") == 3


def test_a_list_item_is_marked_without_breaking_the_list():
    p = make("l1", "The checks are:\n- a review before every release of a widget\n- an audit every quarter", "list")
    html = str(to_html(marked_text(p, "There is an audit every quarter.")))
    assert '<li><mark class="match">an audit every quarter</mark></li>' in html and "<ul>" in html


def test_a_claim_sharing_nothing_marks_nothing():
    p = make("p1", "Widgets are tested in a lab.")
    assert marked_text(p, "Bananas are yellow.") == p.text
    assert best_matches("", ["a b c"]) == []


def test_headings_open_where_the_heading_path_changes_and_form_the_contents():
    parents = [make("a", "Intro.", path=("1. Scope",)), make("b", "More.", path=("1. Scope",)),
               make("c", "Sub.", path=("1. Scope", "1.1 Terms")), make("d", "Next.", path=("2. Use",))]
    doc = render_document(DocEntry("NIST.AI.999-9", parents[0].title), parents)
    assert [(h.level, h.text) for h in doc.toc] == [(1, "1. Scope"), (2, "1.1 Terms"), (1, "2. Use")]
    assert [len(s.headings) for s in doc.sections] == [1, 0, 1, 1]
    assert len({h.anchor for h in doc.toc}) == 3 and not doc.pages


def test_a_preview_is_the_first_lines_as_plain_text():
    assert preview_text(TABLE).startswith("Table 1: Monitoring categories Category · What is watched")
    long = preview_text("word " * 200)
    assert len(long) <= 282 and long.endswith("…")

"""An indexed document as HTML, built from the parents the index holds (the blocks ingestion
parsed), so the viewer shows exactly the passages that answers cite, by their ids.

Why Markdown: a parent's text is the corpus's Markdown (tables as pipe tables, lists as `-`
items), so a CommonMark renderer with the table extension gives real tables and lists. Raw HTML in
the source is escaped by the renderer and the result goes through an allow-list sanitiser, so a
document added to the corpus cannot put script or markup of its own on the page.

Rendering is done once per index load and document (`Library`, held per Index object); a request
re-renders only the passage it opens, with the checker's matched sentences marked.
"""
from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass, field

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

from ..engine.corpus import DocEntry, indexed_documents
from ..engine.text import split_sentences
from ..engine.types import Parent
from ..engine.verification import best_matches

MARK_START, MARK_END = "\ue000", "\ue001"  # private-use sentinels: no corpus text carries them
ALLOWED_TAGS = {"p", "br", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li", "table", "thead",
                "tbody", "tr", "th", "td", "a", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "sup", "sub", "mark",
                "span", "del", "s"}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "mark": {"class"}, "th": {"style"}, "td": {"style"},
                      "ol": {"start"}}
PREVIEW_CHARS = 280
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")


def to_html(text: str) -> Markup:
    """Markdown to sanitised HTML; MARK_START/MARK_END around a stretch become <mark class="match">."""
    html = _markdown.render(text or "")
    html = html.replace(MARK_START, '<mark class="match">').replace(MARK_END, "</mark>")
    # the sanitiser re-parses the HTML, so a mark that crosses inline markup is nested properly
    return Markup(nh3.clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES,
                            url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer"))


def units(parent: Parent) -> list[str]:
    """What the viewer can mark inside a passage: a table's body rows, else its sentences."""
    if parent.kind == "table":
        rows = [line for line in parent.text.split("\n") if line.strip().startswith("|")]
        return [r for r in rows[1:] if not re.fullmatch(r"\|?[\s:|-]+\|?", r.strip())]
    return [_LIST_MARKER.sub("", s) for s in split_sentences(parent.text)]


def marked_text(parent: Parent, claim: str) -> str:
    """The parent's Markdown with the units that best match `claim` wrapped in sentinels (a table
    row cell by cell, so the row stays a row)."""
    found = units(parent)
    text = parent.text
    for i in best_matches(claim, found):
        unit = found[i]
        if parent.kind == "table":
            cells = unit.strip().strip("|").split("|")
            wrapped = "| " + " | ".join(f"{MARK_START}{c.strip()}{MARK_END}" if c.strip() else "" for c in cells) + " |"
            text = text.replace(unit, wrapped, 1)
        elif unit and unit in text:
            text = text.replace(unit, f"{MARK_START}{unit}{MARK_END}", 1)
    return text


@dataclass
class Heading:
    level: int  # 1 = a top-level section of the document
    text: str
    anchor: str


@dataclass
class Section:
    """One parent as the page shows it, with the headings that open before it."""
    parent: Parent
    html: Markup
    headings: list[Heading] = field(default_factory=list)


@dataclass
class RenderedDoc:
    entry: DocEntry
    sections: list[Section]

    @property
    def toc(self) -> list[Heading]:
        return [h for s in self.sections for h in s.headings]

    @property
    def pages(self) -> bool:
        """True for a document read from PDF (its passages carry page numbers)."""
        return any(s.parent.page is not None for s in self.sections)


def render_document(entry: DocEntry, parents: list[Parent]) -> RenderedDoc:
    sections, path, count = [], [], 0
    for parent in parents:
        heads = []
        common = 0
        while common < min(len(path), len(parent.heading_path)) and path[common] == parent.heading_path[common]:
            common += 1
        for level in range(common, len(parent.heading_path)):
            count += 1
            heads.append(Heading(level + 1, parent.heading_path[level], f"h{count}"))
        path = list(parent.heading_path)
        sections.append(Section(parent, to_html(parent.text), heads))
    return RenderedDoc(entry, sections)


def preview_text(text: str, limit: int = PREVIEW_CHARS) -> str:
    """A passage's first lines as plain text (table pipes and list markers left out)."""
    lines = [re.sub(r"\s*\|\s*", " · ", line.strip().strip("|")).strip(" ·") for line in (text or "").split("\n")
             if line.strip() and not re.fullmatch(r"\|?[\s:|-]+\|?", line.strip())]
    text = " ".join(_LIST_MARKER.sub("", line) for line in lines)
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


class Library:
    """One index's documents: entries by id, parents in index order, rendered pages on first use."""

    def __init__(self, index):
        self.entries: dict[str, DocEntry] = {e.id: e for e in indexed_documents(index)}
        self.parents = index.parents
        self._by_doc: dict[str, list[Parent]] = {}
        for parent in index.parents.values():
            self._by_doc.setdefault(parent.doc, []).append(parent)
        self._rendered: dict[str, RenderedDoc] = {}
        self._lock = threading.Lock()

    def document(self, doc_id: str) -> RenderedDoc | None:
        if doc_id not in self.entries:
            return None
        with self._lock:
            if doc_id not in self._rendered:
                self._rendered[doc_id] = render_document(self.entries[doc_id], self._by_doc[doc_id])
            return self._rendered[doc_id]

    def title(self, doc_id: str, stored_title: str = "") -> str:
        entry = self.entries.get(doc_id) or DocEntry(doc_id, stored_title)
        return entry.display


_libraries: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_libraries_lock = threading.Lock()


def library_for(index) -> Library:
    """The index's Library, made once per loaded index (a reloaded index gets a new one)."""
    with _libraries_lock:
        library = _libraries.get(index)
        if library is None:
            library = _libraries[index] = Library(index)
        return library

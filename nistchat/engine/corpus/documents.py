"""Read a corpus file (markdown or PDF) into a `Document` of structural `Block`s.

The reader's job is structure and hygiene, not sizing: it decides what is a section heading, a
table (with its caption), a figure description, a list (with the sentence that introduces it) or
a prose paragraph, and it strips what would otherwise pollute retrieval -- running page headers,
bare page numbers, image links, tables of contents, reference lists and footnote markers.
Chunking (chunking.py) later sizes these blocks into parents and children.

Bad input raises `DocumentError` (one per file) so ingestion can report it and go on.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..text import split_sentences
from ..types import Block, Document
from .wordfix import WordRepair

SUPPORTED_SUFFIXES = (".md", ".markdown", ".pdf")


class DocumentError(ValueError):
    """A file that cannot be read as a document; `.path` and `.reason` say which and why."""

    def __init__(self, path: Path | str, reason: str):
        super().__init__(f"{Path(path).name}: {reason}")
        self.path = Path(path)
        self.reason = reason


def read_document(path: Path) -> Document:
    """Dispatch on the file suffix; raises DocumentError for anything unreadable."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise DocumentError(path, f"unsupported file type {suffix!r}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(path, f"cannot read file ({exc.strerror or exc})") from None
    if not data.strip():
        raise DocumentError(path, "empty file")
    if suffix == ".pdf":
        return read_pdf_bytes(path, data)
    return read_markdown_bytes(path, data)


def doc_short_name(doc_id: str) -> str:
    """'NIST.AI.800-4' -> 'NIST AI 800-4': how people cite the document."""
    return re.sub(r"(?<=[A-Za-z])\.|\.(?=[A-Za-z])", " ", doc_id)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------------
# Line hygiene shared by both readers

IMAGE_LINK = re.compile(r"!\[[^\]]*\]\([^)]*\)")
FOOTNOTE_MARK = re.compile(r"\s?\[\^\d+\](?!:)")
BOLD = re.compile(r"\*\*|__")
PAGE_NUMBER = re.compile(r"^(page\s+)?(\d{1,3}|[ivxlc]{1,7})(\s+of\s+\d{1,3})?$", re.I)
# "NIST SP 800-218A | Page 42", "NIST AI 100-2e2023 January 2024", "NIST AI 100-1 AI RMF 1.0"
RUNNING_HEADER = re.compile(
    r"^(NIST\s+(SP|AI|Special Publication)\b[\w .:-]{0,40}?(\|\s*Page\s+\d+)?"
    r"|This publication is available free of charge from:?.*|https?://doi\.org/\S+(\s+\w+\s+\d{4})?)$",
    re.I)
TOC_LEADER = re.compile(r"(\.\s*){4,}\s*\d+\s*$|\.{4,}|…{2,}")
DROP_SECTION = re.compile(
    r"^(appendix\s+[\w.]+[.:]?\s*)?(references|bibliography|works cited|(table\s+of\s+)?contents|"
    r"list\s+of\s+(tables|figures|exhibits))$", re.I)
CONTINUED = re.compile(r"\s*(\(continued\)|continued on next page|continued from previous page)\s*$", re.I)
REFERENCE_ITEM = re.compile(r"^(-\s*)?\[\d+\]\s")


def clean_inline(text: str) -> str:
    """Remove image links, bold noise and inline footnote markers; collapse spaces."""
    text = IMAGE_LINK.sub("", text)
    text = CONTINUED.sub("", text)
    text = BOLD.sub("", text)
    text = FOOTNOTE_MARK.sub("", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def is_boilerplate_line(line: str) -> bool:
    """A line that is only a running header, page number, DOI line or TOC entry."""
    s = clean_inline(line).strip(" |")
    if not s:
        return False
    return bool(PAGE_NUMBER.match(s) or (len(s) <= 90 and RUNNING_HEADER.match(s)) or TOC_LEADER.search(s))


def repeated_lines(lines: list[str], min_count: int = 3, max_len: int = 90) -> set[str]:
    """Short non-structural lines that recur: running headers/footers the converter left in."""
    counts = Counter(clean_inline(l) for l in lines
                     if l.strip() and not l.lstrip().startswith(("#", "|", "-", "*", ">", "[^"))
                     and len(l.strip()) <= max_len)
    return {line for line, n in counts.items() if n >= min_count and line and not line.endswith((".", ":"))}


def repair_words(doc: Document) -> Document:
    """Undo words the converter glued or split ("onpostdeployment", "techn ical") in everything
    that is indexed or shown: block text, captions, table cells, headings and the title.

    Why per document: the repair trusts the document's own word counts (wordfix.py).
    """
    headings = sorted({h for block in doc.blocks for h in block.heading_path})
    repair = WordRepair.for_texts([doc.title, *headings, *(block.text for block in doc.blocks)])
    doc.title = repair.fix(doc.title)
    for block in doc.blocks:
        block.text = repair.fix(block.text)
        block.caption = repair.fix(block.caption)
        block.heading_path = [repair.fix(h) for h in block.heading_path]
        block.header = [repair.fix(cell) for cell in block.header]
        block.rows = [[repair.fix(cell) for cell in row] for row in block.rows]
    return doc


# --------------------------------------------------------------------------------------------
# Headings -> heading path

NUMBERED = re.compile(r"^((\d+|[A-Z])(\.\d+)+|\d+)\.?\s+\S")
TOP_LEVEL = re.compile(r"^(appendix\b|part\s+\d+|executive summary|abstract|foreword|preface|acknowledg|"
                       r"references|bibliography|glossary|footnotes|keywords|audience|authority)", re.I)
TABLE_CAPTION = re.compile(r"^table\s+([A-Z]+\s+)?[A-Z]?[\d.]+[\w.-]*\b", re.I)
FIGURE_CAPTION = re.compile(r"^(figure|fig\.)\s*[A-Z]?[\d.]+", re.I)


def heading_rank(text: str, md_level: int, stack: list[tuple[str, float, bool]]) -> tuple[float, bool]:
    """Logical depth of a heading and whether it anchors the hierarchy (numbered/appendix/part).

    The cleaned corpus writes most headings as `##` whatever their depth, so depth comes from the
    numbering ("1.2.1" is 3 deep); unnumbered headings nest under the nearest anchoring one.
    """
    m = NUMBERED.match(text)
    if m:
        return float(m.group(1).count(".") + 1), True
    if TOP_LEVEL.match(text):
        return 1.0, True
    base = next((rank for _, rank, anchored in reversed(stack) if anchored), None)
    if base is None:
        return 1.0 + max(0, md_level - 2) * 0.1, False
    return base + 0.5 + max(0, md_level - 2) * 0.1, False


@dataclass
class HeadingStack:
    entries: list[tuple[str, float, bool]] = field(default_factory=list)

    def push(self, text: str, md_level: int) -> float:
        rank, anchored = heading_rank(text, md_level, self.entries)
        while self.entries and self.entries[-1][1] >= rank:
            self.entries.pop()
        self.entries.append((text, rank, anchored))
        return rank

    @property
    def path(self) -> list[str]:
        return [t for t, _, _ in self.entries]


# --------------------------------------------------------------------------------------------
# Markdown

LIST_ITEM = re.compile(r"^(\s*)([-*+•]|\d{1,2}[.)]|[a-z][.)]|o)\s+\S")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
BOLD_TABLE_CAPTION = re.compile(r"^\*\*(Table\s+.+?)\*\*\s*$", re.I)
RULE = re.compile(r"^\s*([-*_]\s*){3,}$")


def read_markdown_bytes(path: Path, data: bytes) -> Document:
    if b"\x00" in data[:4096]:
        raise DocumentError(path, "binary data, not a text document")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DocumentError(path, "not UTF-8 text") from None
    printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in text[:20000])
    if printable < 0.95 * len(text[:20000]):
        raise DocumentError(path, "mostly unprintable characters, not a text document")
    doc = parse_markdown(text, doc_id=path.stem, source=path.name)
    doc.sha256 = sha256_bytes(data)
    if not doc.blocks:
        raise DocumentError(path, "no readable text after removing boilerplate")
    return doc


def parse_markdown(text: str, *, doc_id: str, source: str = "") -> Document:
    """Markdown text -> Document. Pure function of the text (deterministic)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return repair_words(MarkdownParser(lines, doc_id, source).parse())


INTRO_MIN_WORDS = 15  # a lead-in shorter than this ("The tiers are:") takes earlier sentences too


def _lead_in(sentences: list[str]) -> str:
    """The last sentence of a paragraph that introduces a list, plus earlier ones while it is short.

    Why: "The tiers are:" names nothing; the sentence before it ("The plan defines three tiers of
    topics ...") is what a question about the list will echo.
    """
    taken: list[str] = []
    for sentence in reversed(sentences):
        taken.insert(0, sentence)
        if len(" ".join(taken).split()) >= INTRO_MIN_WORDS or len(taken) >= 3:
            break
    return " ".join(taken)


class MarkdownParser:
    """One pass over the lines with a small amount of state (pending captions, skip sections)."""

    def __init__(self, lines: list[str], doc_id: str, source: str):
        self.doc_id, self.source = doc_id, source
        self.repeats = repeated_lines(lines)
        self.lines = [l for l in lines if not self._drop_line(l)]
        self.blocks: list[Block] = []
        self.headings = HeadingStack()
        self.title = ""
        self.table_caption = ""
        self.figure_caption = ""
        self.skip_rank: float | None = None  # inside a TOC / reference section until a heading ends it

    def _drop_line(self, line: str) -> bool:
        stripped = line.strip()
        if not stripped:
            return False
        if IMAGE_LINK.fullmatch(stripped) or RULE.match(stripped) and not stripped.startswith("|"):
            return True
        if stripped.startswith(("|", "#", "- [", "[^")):
            return False
        return is_boilerplate_line(stripped) or clean_inline(stripped) in self.repeats

    def emit(self, kind: str, text: str, caption: str = "", **extra) -> None:
        text = text.strip()
        if not text or self.skip_rank is not None:
            return
        self.blocks.append(Block(kind=kind, text=text, heading_path=list(self.headings.path),
                                 caption=caption, **extra))

    def parse(self) -> Document:
        i, n = 0, len(self.lines)
        while i < n:
            line = self.lines[i]
            stripped = line.strip()
            if not stripped:
                i += 1
                continue
            if (m := HEADING.match(stripped)):
                self.heading(len(m.group(1)), clean_inline(m.group(2)))
                i += 1
            elif (m := BOLD_TABLE_CAPTION.match(stripped)) and TABLE_CAPTION.match(clean_inline(m.group(1))):
                self.flush_figure_caption()
                self.table_caption = clean_inline(m.group(1))
                i += 1
            elif stripped.startswith(">"):
                i = self.blockquote(i)
            elif stripped.startswith("|") or (stripped.count("|") >= 2 and i + 1 < n
                                              and re.match(r"^\|?\s*:?-{3,}", self.lines[i + 1].strip())):
                i = self.table(i)
            elif LIST_ITEM.match(line) and not REFERENCE_ITEM.match(stripped.lstrip("- ")):
                i = self.list_run(i)
            else:
                i = self.paragraph(i)
        self.flush_figure_caption()
        if self.table_caption:
            self.emit("prose", self.table_caption)
        title = self.title or doc_short_name(self.doc_id)
        return Document(doc_id=self.doc_id, title=title, source=self.source, sha256="", blocks=self.blocks)

    # -- headings and captions
    def heading(self, level: int, text: str) -> None:
        if not text:
            return
        if level == 1 and not self.title:
            self.title = text
            return
        if text.endswith(":") and len(text.split()) >= 4:  # a sentence set as a heading: list intro
            self.emit("prose", text)
            return
        if TABLE_CAPTION.match(text) and not DROP_SECTION.match(text):
            self.flush_figure_caption()
            if self.table_caption:  # a caption with no table after it is still information
                self.emit("prose", self.table_caption)
            self.table_caption = text
            return
        if FIGURE_CAPTION.match(text):
            self.flush_figure_caption()
            self.figure_caption = text
            return
        self.flush_figure_caption()
        if self.table_caption:
            self.emit("prose", self.table_caption)
            self.table_caption = ""
        rank = heading_rank(text, level, self.headings.entries)[0]
        if self.skip_rank is not None and rank <= self.skip_rank:
            self.skip_rank = None
        if self.skip_rank is not None:
            return
        self.headings.push(text, level)
        if DROP_SECTION.match(text):
            self.skip_rank = rank

    def flush_figure_caption(self) -> None:
        if self.figure_caption:
            self.emit("prose", self.figure_caption)
            self.figure_caption = ""

    # -- blockquotes: a Technical Description is one figure block
    def blockquote(self, i: int) -> int:
        body = []
        while i < len(self.lines) and self.lines[i].strip().startswith(">"):
            body.append(re.sub(r"^\s*>\s?", "", self.lines[i]))
            i += 1
        text = "\n".join(clean_inline(l) if not LIST_ITEM.match(l) else l.rstrip() for l in body).strip()
        text = BOLD.sub("", text)
        first = clean_inline(body[0].lstrip("# ")) if body else ""
        if re.match(r"technical description", first, re.I):
            name = re.sub(r"^technical description:\s*", "", first, flags=re.I)
            caption = self.figure_caption or name
            rest = "\n".join(l.lstrip("# ") if k == 0 else l for k, l in enumerate(text.split("\n"))).strip()
            full = f"{self.figure_caption}\n{rest}" if self.figure_caption else rest
            self.figure_caption = ""
            self.emit("figure", re.sub(r"\n{2,}", "\n", full), caption=caption)
        else:
            self.flush_figure_caption()
            self.emit("prose", " ".join(clean_inline(l) for l in body if l.strip()))
        return i

    # -- tables
    def table(self, i: int) -> int:
        rows: list[list[str]] = []
        while i < len(self.lines):
            s = self.lines[i].strip()
            if not s:
                # a blank line inside a table is tolerated only when the table clearly continues
                if i + 1 < len(self.lines) and self.lines[i + 1].strip().startswith("|") and rows and \
                        self.lines[i + 1].strip().count("|") >= 2 and not re.match(r"^\|?\s*:?-{3,}", self.lines[i + 1].strip()):
                    i += 1
                    continue
                break
            if s.count("|") < 1 or (not s.startswith("|") and s.count("|") < 2):
                break
            if re.match(r"^\|?[\s:|-]+\|?$", s) and "-" in s:
                i += 1
                continue  # separator row
            cells = [clean_inline(c) for c in s.strip("|").split("|")]
            rows.append(cells)
            i += 1
        rows = [r for r in rows if any(c for c in r)]
        if not rows:
            return i
        header, body = rows[0], rows[1:]
        if not any(header) or all(not c for c in header[1:]) and len(header) > 2:
            header, body = (body[0], body[1:]) if body else (header, body)
        caption = self.table_caption
        self.table_caption = ""
        content = re.sub(r"[^A-Za-z0-9]", "", "".join(header) + "".join(c for r in body for c in r))
        if len(content) < 40:
            return i  # converter debris: a diagram's labels read as a tiny table
        if looks_like_toc([header] + body) or re.search(r"\bcontents\b", " ".join(header), re.I):
            return i
        width = max(len(header), *(len(r) for r in body)) if body else len(header)
        header = header + [""] * (width - len(header))
        body = [r + [""] * (width - len(r)) for r in body]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * width]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        text = (caption + "\n" if caption else "") + "\n".join(lines)
        self.flush_figure_caption()
        self.emit("table", text, caption=caption, header=header, rows=body)
        return i

    # -- lists, with the sentence that introduces them
    def list_run(self, i: int) -> int:
        items: list[str] = []
        while i < len(self.lines):
            line = self.lines[i]
            s = line.strip()
            if not s:
                j = i + 1
                while j < len(self.lines) and not self.lines[j].strip():
                    j += 1
                if j < len(self.lines) and LIST_ITEM.match(self.lines[j]):
                    i = j
                    continue
                break
            if HEADING.match(s) or s.startswith(("|", ">")):
                break
            if LIST_ITEM.match(line):
                items.append(line.rstrip())
            elif items:  # wrapped continuation of the previous item
                items[-1] += " " + s
            i += 1
        items = [clean_inline_keep_indent(it) for it in items]
        items = [it for it in items if it.strip()]
        if not items:
            return i
        if looks_like_references(items):
            return i
        intro = self.take_intro()
        if self.table_caption:  # e.g. a "Practice-ID Definition" list between a caption and its table
            intro = f"{self.table_caption}\n{intro}".strip()
        text = (intro + "\n" if intro else "") + "\n".join(items)
        self.emit("list", text, caption=intro)
        return i

    def take_intro(self) -> str:
        """The paragraph just before a list introduces it when it ends with ':' or is short.

        A short intro is moved into the list block; the last sentence of a long paragraph that
        ends with ':' is copied, so the paragraph keeps its own meaning as prose.
        """
        if not self.blocks:
            return ""
        prev = self.blocks[-1]
        if prev.kind != "prose" or prev.heading_path != self.headings.path or self.skip_rank is not None:
            return ""
        text = prev.text.strip()
        if len(text) <= 300 and (text.endswith(":") or len(text) <= 160):
            self.blocks.pop()
            return text
        if text.endswith(":"):
            return _lead_in(split_sentences(text, style="chunk"))
        return ""

    # -- paragraphs
    def paragraph(self, i: int) -> int:
        parts = []
        while i < len(self.lines):
            line = self.lines[i]
            s = line.strip()
            if not s or HEADING.match(s) or s.startswith((">", "|")) or (LIST_ITEM.match(line) and parts
                                                                         and not parts[-1].endswith(("-",))):
                break
            if s.startswith("[^") and parts:
                break  # each footnote definition is its own paragraph
            parts.append(s)
            i += 1
            if s.startswith("[^"):
                break
        text = clean_inline(" ".join(parts))
        text = re.sub(r"^\[\^(\d+)\]:\s*", r"Footnote \1: ", text)
        if not text or re.fullmatch(r"Footnote \d+: \S+", text):
            return i  # a footnote that is only a URL carries nothing to retrieve
        if BOLD_TABLE_CAPTION.match(" ".join(parts)):
            self.table_caption = text
            return i
        if re.match(r"^(figure|fig\.)\s*\d+[.:]\s", text, re.I) and len(text) < 400 and not self.figure_caption:
            # "Fig. 1. Examples of ..." (auto-converted): a caption line, kept as prose
            self.emit("prose", text, caption=text)
            return i
        self.flush_figure_caption()
        if not looks_like_references([text]):
            self.emit("prose", text)
        return i


def clean_inline_keep_indent(item: str) -> str:
    indent = len(item) - len(item.lstrip())
    body = clean_inline(item)
    body = re.sub(r"^[*+•o]\s+", "- ", body)
    return " " * min(indent, 8) + body


def looks_like_references(items: list[str]) -> bool:
    """Citation lists ("[12] Author. Title. Venue, 2021.") crowd out content: drop them."""
    if len(items) < 3:
        return False
    refs = sum(bool(REFERENCE_ITEM.match(it.strip().lstrip("- ").strip())
                    or REFERENCE_ITEM.match(it.strip())) for it in items)
    return refs >= 0.6 * len(items)


def looks_like_toc(rows: list[list[str]]) -> bool:
    """A table whose rows mostly end in a page number is a table of contents."""
    if len(rows) < 3:
        return False
    ends = 0
    for r in rows:
        cells = [c for c in r if c.strip()]
        if cells and re.fullmatch(r"\d{1,3}|[ivxlc]{1,6}", cells[-1].strip(), re.I) or \
                cells and re.search(r"\s\d{1,3}$", cells[-1]) and len(" ".join(cells)) < 120:
            ends += 1
    return ends >= 0.6 * len(rows)


# --------------------------------------------------------------------------------------------
# PDF

PDF_HEADING = re.compile(r"^((\d{1,2})(\.\d{1,2}){0,3}\.?)\s+([A-Z][^.:;]{1,80})$")
PDF_BULLET = re.compile(r"^[•●▪◦‣∙·]\s*")


def read_pdf_bytes(path: Path, data: bytes) -> Document:
    """PDF -> Document via pypdf: prose and lists per page, page numbers kept.

    pypdf extracts text only; it has no table structure, so tables in PDFs arrive as prose lines
    (their words are still indexed). Use the cleaned markdown where table structure matters.
    Lines that recur on many pages (running headers and footers) and bare page numbers are dropped;
    headings are detected heuristically from numbered lines ("3.2 Safe").
    """
    import io

    import pypdf
    from pypdf.errors import PdfReadError

    if not data.lstrip().startswith(b"%PDF"):
        raise DocumentError(path, "not a PDF (no %PDF header)")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                reader.decrypt("")
            except Exception:
                raise DocumentError(path, "encrypted PDF") from None
        pages = [(page.extract_text() or "") for page in reader.pages]
    except DocumentError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError, AttributeError) as exc:
        raise DocumentError(path, f"unreadable PDF ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # pypdf raises a wide variety on corrupt files
        raise DocumentError(path, f"unreadable PDF ({type(exc).__name__}: {exc})") from None
    doc = parse_pdf_pages(pages, doc_id=path.stem, source=path.name)
    doc.sha256 = sha256_bytes(data)
    if not doc.blocks:
        raise DocumentError(path, "no extractable text (scanned images?)")
    return doc


def _line_key(line: str) -> str:
    return re.sub(r"\d+", "#", line.strip().lower())


def parse_pdf_pages(pages: list[str], *, doc_id: str, source: str = "") -> Document:
    page_lines = [[l.rstrip() for l in p.split("\n")] for p in pages]
    recurring = Counter()
    for lines in page_lines:
        for key in {_line_key(l) for l in lines if l.strip() and len(l.strip()) <= 90}:
            recurring[key] += 1
    min_pages = max(3, int(0.25 * len(pages)))
    headers = {k for k, c in recurring.items() if c >= min_pages}

    title = ""
    headings = HeadingStack()
    blocks: list[Block] = []
    skip_rank: float | None = None

    def emit(kind: str, text: str, page: int, caption: str = "") -> None:
        text = text.strip()
        if text and skip_rank is None and not TOC_LEADER.search(text):
            blocks.append(Block(kind=kind, text=text, heading_path=list(headings.path), page=page, caption=caption))

    for page_no, lines in enumerate(page_lines, start=1):
        lines = [l for l in lines if l.strip() and _line_key(l) not in headers and not is_boilerplate_line(l)]
        if not title and lines:
            title = " ".join(l.strip() for l in lines[:3])
        width = max((len(l) for l in lines), default=0)
        para: list[str] = []
        items: list[str] = []

        def flush_para() -> None:
            if para:
                emit("prose", join_pdf_lines(para), page_no)
                para.clear()

        def flush_items() -> None:
            if items:
                intro = ""
                if blocks and blocks[-1].kind == "prose" and blocks[-1].page == page_no and \
                        blocks[-1].text.endswith(":") and len(blocks[-1].text) <= 300:
                    intro = blocks.pop().text
                emit("list", (intro + "\n" if intro else "") + "\n".join("- " + join_pdf_lines(it) for it in items),
                     page_no, caption=intro)
                items.clear()

        for line in lines:
            s = line.strip()
            m = PDF_HEADING.match(s)
            if m and int(m.group(2)) <= 20 and len(s) <= 90 and not s.endswith((",", "-")):
                flush_para()
                flush_items()
                rank = heading_rank(s, 2, headings.entries)[0]
                if skip_rank is not None and rank <= skip_rank:
                    skip_rank = None
                headings.push(s, 2)
                continue
            if DROP_SECTION.match(s) or (TOP_LEVEL.match(s) and len(s) <= 80 and not s.endswith(".")):
                flush_para()
                flush_items()
                skip_rank = None
                headings.push(s, 2)
                if DROP_SECTION.match(s):
                    skip_rank = 1.0
                continue
            if PDF_BULLET.match(s):
                flush_para()
                items.append([PDF_BULLET.sub("", s)])
                continue
            if items and not para:
                items[-1].append(s)
                if s.endswith((".", ";")) and len(line) < 0.8 * width:
                    flush_items()
                continue
            para.append(s)
            if s.endswith((".", ":", "?", "!")) and len(line) < 0.8 * width:
                flush_para()
        flush_items()
        flush_para()
    return repair_words(Document(doc_id=doc_id, title=title or doc_short_name(doc_id), source=source, sha256="",
                                 blocks=blocks))


def join_pdf_lines(lines: list[str]) -> str:
    """Join wrapped lines, undoing end-of-line hyphenation ("envi-" + "ronment")."""
    out = ""
    for line in lines:
        line = line.strip()
        if out.endswith("-") and line[:1].islower() and not re.match(r"(or|and|to)\b", line):
            out = out[:-1] + line
        else:
            out = f"{out} {line}" if out else line
    return clean_inline(out)

"""Blocks -> parents (what the reader sees) and children (what the indexes search).

Parents are semantic units, never cut mid-structure: a section's prose paragraphs up to a size
budget, a whole table with its caption (very large tables become row segments that each repeat
caption and header and list each other as `neighbours`), a figure description, a list with the
sentence that introduces it. Children are small units inside a parent: overlapping sentence
windows of prose, one table row carrying caption + header (plus one overview child listing the
rows), a figure's summary / bullet groups / keywords, groups of list items.

Child text = a light context prefix + content. The prefix is "<doc short name> | <section>" on its
own first line: it lets dense and BM25 search tell "Govern" in AI 100-1 from "Govern" in
AI 600-1 without drowning the content (it is a few tokens against ~60-120 words). Children whose
content (without the prefix) is shorter than `min_child_chars` stay out of BM25, so fragments
such as a lone "GOVERN 1:" cannot win keyword search; they are still embedded.

Ids are deterministic: `<doc slug>:<sha1(kind, heading path, ordinal in that section)[:10]>` for
parents and `<parent id>-<n>` for children, so the same input gives the same ids anywhere.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from .documents import doc_short_name
from ..text import estimate_tokens, split_sentences
from ..types import Block, Child, Document, Parent


@dataclass(frozen=True)
class ChunkConfig:
    parent_tokens: int = 350  # prose parent budget (~250-400 tokens)
    table_tokens: int = 1400  # a table up to this size stays ONE parent; larger ones become segments
    list_tokens: int = 900  # a list up to this size stays one parent
    child_words: int = 90  # target child size (60-120 words)
    child_overlap_words: int = 25  # prose windows overlap by about this much
    min_child_chars: int = 40  # shorter child content is kept out of BM25

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def doc_slug(doc_id: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", doc_id.lower()).strip("-")


@dataclass
class _Draft:
    """A parent before ids are assigned; `children` are content strings (no prefix)."""
    kind: str
    heading_path: list[str]
    text: str
    page: int | None
    children: list[str] = field(default_factory=list)
    group: int | None = None  # segments of one table/list share a group -> neighbours


def chunk_document(doc: Document, config: ChunkConfig = ChunkConfig()) -> tuple[list[Parent], list[Child]]:
    drafts = _parent_drafts(doc.blocks, config)
    return _assemble(doc, drafts, config)


# --------------------------------------------------------------------------------------------
# Parents

def _parent_drafts(blocks: list[Block], config: ChunkConfig) -> list[_Draft]:
    drafts: list[_Draft] = []
    run: list[Block] = []
    group_counter = iter(range(1_000_000))

    def flush_prose() -> None:
        if run:
            drafts.extend(_prose_parents(run, config))
            run.clear()

    for block in blocks:
        if block.kind == "table":
            block_refs = _table_reference(block, blocks)
        if block.kind == "prose":
            if run and run[0].heading_path != block.heading_path:
                flush_prose()
            run.append(block)
            continue
        flush_prose()
        if block.kind == "table":
            drafts.extend(_table_parents(block, config, next(group_counter), block_refs))
        elif block.kind == "figure":
            drafts.append(_Draft("figure", block.heading_path, block.text, block.page,
                                 _figure_children(block, config)))
        else:
            drafts.extend(_list_parents(block, config, next(group_counter)))
    flush_prose()
    return drafts


def _prose_parents(blocks: list[Block], config: ChunkConfig) -> list[_Draft]:
    """Paragraphs of one section, packed up to the budget; an oversized paragraph is split on sentences."""
    pieces: list[tuple[str, int | None]] = []
    for b in blocks:
        if estimate_tokens(b.text, by="words") <= config.parent_tokens:
            pieces.append((b.text, b.page))
        else:
            sentences = split_sentences(b.text, style="chunk")
            pieces.extend((chunk, b.page) for chunk in _pack_sentences(sentences, config.parent_tokens))
    drafts: list[_Draft] = []
    current: list[str] = []
    page = None
    for text, p in pieces:
        if current and estimate_tokens("\n\n".join(current + [text]), by="words") > config.parent_tokens:
            drafts.append(_Draft("prose", blocks[0].heading_path, "\n\n".join(current), page))
            current = []
        if not current:
            page = p
        current.append(text)
    if current:
        drafts.append(_Draft("prose", blocks[0].heading_path, "\n\n".join(current), page))
    for d in drafts:
        d.children = _sentence_windows(d.text, config)
    return drafts


def _pack_sentences(sentences: list[str], budget: int) -> list[str]:
    chunks, current = [], []
    for s in sentences:
        if current and estimate_tokens(" ".join(current + [s]), by="words") > budget:
            chunks.append(" ".join(current))
            current = []
        current.append(s)
    if current:
        chunks.append(" ".join(current))
    return chunks


_TABLE_LABEL = re.compile(r"^(table\s+[A-Z]?\d+(?:\.\d+)*)\b", re.I)


def _table_reference(table: Block, blocks: list[Block]) -> str:
    """The sentence of the table's own section that refers to it ("The monitoring categories
    presented in Table 1 below were derived from ..."): the author's one-line summary of what the
    table is for, which questions echo more than the bare caption does. Empty if none."""
    label = _TABLE_LABEL.match(table.caption or "")
    if not label:
        return ""
    ref = re.compile(rf"\b{re.escape(label.group(1))}(?![\d.]*\d)", re.I)
    for b in blocks:
        if b.kind == "prose" and b.heading_path == table.heading_path and b.text != table.caption:
            for sentence in split_sentences(b.text, style="chunk"):
                if ref.search(sentence):
                    return " ".join(sentence.split()[:40])
    return ""


def _table_parents(block: Block, config: ChunkConfig, group: int, reference: str = "") -> list[_Draft]:
    header, rows, caption = block.header, block.rows, block.caption
    if estimate_tokens(block.text, by="words") <= config.table_tokens or len(rows) <= 1:
        return [_Draft("table", block.heading_path, block.text, block.page,
                       _table_children(caption, header, rows, config, reference), group)]
    head = ("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    budget = config.table_tokens - estimate_tokens(caption + head, by="words")
    segments: list[list[list[str]]] = [[]]
    for row in rows:
        seg_text = "\n".join("| " + " | ".join(r) + " |" for r in segments[-1] + [row])
        if segments[-1] and estimate_tokens(seg_text, by="words") > budget:
            segments.append([])
        segments[-1].append(row)
    drafts, start = [], 1
    for seg in segments:
        end = start + len(seg) - 1
        title = f"{caption} (rows {start}-{end} of {len(rows)})" if caption else f"Table rows {start}-{end} of {len(rows)}"
        text = title + "\n" + head + "\n" + "\n".join("| " + " | ".join(r) + " |" for r in seg)
        drafts.append(_Draft("table", block.heading_path, text, block.page,
                             _table_children(caption, header, seg, config, reference), group))
        start = end + 1
    return drafts


def _list_parents(block: Block, config: ChunkConfig, group: int) -> list[_Draft]:
    intro = block.caption
    lines = block.text.split("\n")
    body = lines[len(intro.split("\n")):] if intro and block.text.startswith(intro) else lines
    items = _group_items(body)
    if estimate_tokens(block.text, by="words") <= config.list_tokens:
        return [_Draft("list", block.heading_path, block.text, block.page,
                       _list_children(intro, items, config), group)]
    drafts, current = [], []
    budget = config.list_tokens - estimate_tokens(intro, by="words")
    for item in items:
        if current and estimate_tokens("\n".join(current + [item]), by="words") > budget:
            drafts.append(current)
            current = []
        current.append(item)
    if current:
        drafts.append(current)
    return [_Draft("list", block.heading_path, (intro + "\n" if intro else "") + "\n".join(seg), block.page,
                   _list_children(intro, seg, config), group) for seg in drafts]


def _group_items(lines: list[str]) -> list[str]:
    """Top-level items with their indented sub-items attached."""
    items: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        if items and (line.startswith((" ", "\t")) or not re.match(r"^([-*+•]|\d{1,2}[.)]|[a-z][.)]|o)\s", line)):
            items[-1] += "\n" + line
        else:
            items.append(line)
    return items


# --------------------------------------------------------------------------------------------
# Children (content only; the context prefix is added in _assemble)

def _sentence_windows(text: str, config: ChunkConfig) -> list[str]:
    """Overlapping windows of whole sentences, ~child_words long."""
    sentences = split_sentences(text, style="chunk")
    if len(text.split()) <= config.child_words * 1.3 or len(sentences) <= 1:
        return [re.sub(r"\s+", " ", text).strip()]
    windows, start = [], 0
    while start < len(sentences):
        end, words = start, 0
        while end < len(sentences) and (words < config.child_words or end == start):
            words += len(sentences[end].split())
            end += 1
        windows.append(" ".join(sentences[start:end]))
        if end >= len(sentences):
            break
        back, overlap = end, 0
        while back - 1 > start and overlap + len(sentences[back - 1].split()) <= config.child_overlap_words:
            back -= 1
            overlap += len(sentences[back].split())
        start = back if back > start else end
    return windows


def _split_words(text: str, size: int) -> list[str]:
    words = text.split()
    return [" ".join(words[i:i + size]) for i in range(0, len(words), size)] or [text]


def _table_children(caption: str, header: list[str], rows: list[list[str]], config: ChunkConfig,
                    reference: str = "") -> list[str]:
    """An overview (caption, the section's sentence referring to the table, columns, each row's
    first cell) and one child per row with caption + header."""
    label = caption or "Table"
    children = []
    firsts = [next((c for c in r if c), "") for r in rows]
    overview = f"{label}. {reference + ' ' if reference else ''}Columns: {', '.join(h for h in header if h)}. " \
        "Rows: " + \
        "; ".join(" ".join(f.split()[:14]) for f in firsts if f)
    children.append(" ".join(overview.split()[:config.child_words * 2]))
    for row in rows:
        cells = [f"{h}: {c}" if h else c for h, c in zip(header + [""] * len(row), row) if c]
        text = "; ".join(cells)
        if len(text.split()) <= config.child_words * 1.5:
            children.append(f"{label} | {text}")
        else:
            lead = " ".join(firsts[rows.index(row)].split()[:12])
            for k, piece in enumerate(_split_words(text, config.child_words)):
                children.append(f"{label} | {piece}" if k == 0 else f"{label} | {lead} ... {piece}")
    return children


def _figure_children(block: Block, config: ChunkConfig) -> list[str]:
    """Summary (with caption), bullet groups (each naming the figure), keywords."""
    name = _figure_label(block)
    summary, bullets, keywords, other = [], [], [], []
    for line in block.text.split("\n"):
        s = line.strip()
        if not s:
            continue
        if re.match(r"^summary:", s, re.I):
            summary.append(s)
        elif re.match(r"^keywords:", s, re.I):
            keywords.append(s)
        elif re.match(r"^([-*+•]|\d{1,2}[.)])\s", s):
            if line.startswith((" ", "\t")) and bullets:
                bullets[-1] += " " + s.lstrip("-*+• ")
            else:
                bullets.append(s.lstrip("-*+• "))
        elif not bullets and not summary:
            other.append(s)
        elif bullets:
            bullets[-1] += " " + s
        else:
            summary.append(s)
    head = " ".join(other) or name
    children = [f"{head} {' '.join(summary)}".strip()]
    group: list[str] = []
    for b in bullets:
        if group and len(" ".join(group + [b]).split()) > config.child_words:
            children.append(f"{name}: " + " ".join(group))
            group = []
        group.append(b)
    if group:
        children.append(f"{name}: " + " ".join(group))
    if keywords:
        children.append(f"{name}. " + " ".join(keywords))
    return children


def _figure_label(block: Block) -> str:
    """Short name for a figure: "Figure 3: AI Actors and TEVV ..." from number + description title."""
    number = re.match(r"^(figure|fig\.)\s*[A-Z]?[\d.]*\d", block.caption or "", re.I)
    described = re.search(r"^technical description:\s*(.+)$", block.text, re.I | re.M)
    title = described.group(1).strip() if described else " ".join((block.caption or "Figure").split()[:12])
    return f"{number.group(0)}: {title}" if number else title


LIST_OVERVIEW_MIN_ITEMS = 3


def _item_label(item: str) -> str:
    """An item's name: the text before its first colon when that is short ("Confabulation: The
    production of ..." -> "Confabulation"), else its first ten words."""
    text = re.sub(r"^\s*([-*+•]|\d{1,2}[.)]|[a-z][.)]|o)\s+", "", " ".join(item.split()))
    head = text.split(":", 1)[0]
    return head if ":" in text and len(head.split()) <= 12 else " ".join(text.split()[:10])


def _list_overview(intro: str, items: list[str], config: ChunkConfig) -> str:
    """Lead-in + every item's name: the child that answers "what are the N ...?" questions, which
    match the enumeration as a whole rather than any one group of items."""
    labels = "; ".join(_item_label(i) for i in items)
    text = f"{' '.join(intro.split()[:40])} Items: {labels}"
    return " ".join(text.split()[:config.child_words * 2])


def _list_children(intro: str, items: list[str], config: ChunkConfig) -> list[str]:
    """Items grouped to ~child_words, each group led by the intro sentence; a list split over
    several children also gets an overview child naming every item."""
    lead = " ".join(intro.split()[:40])
    children, group = [], []

    def emit(parts: list[str]) -> None:
        body = " ".join(re.sub(r"\s+", " ", p).strip() for p in parts)
        children.append(f"{lead} {body}".strip())

    for item in items:
        words = item.split()
        if len(words) > config.child_words * 1.5:
            if group:
                emit(group)
                group = []
            for piece in _split_words(item, config.child_words):
                emit([piece])
            continue
        if group and len(" ".join(group + [item]).split()) > config.child_words:
            emit(group)
            group = []
        group.append(item)
    if group:
        emit(group)
    if len(children) > 1 and len(items) >= LIST_OVERVIEW_MIN_ITEMS:
        children.insert(0, _list_overview(intro, items, config))
    return children


# --------------------------------------------------------------------------------------------
# Ids, links, prefixes

def context_prefix(doc: Document, heading_path: list[str]) -> str:
    section = heading_path[-1] if heading_path else ""
    section = section if len(section) <= 100 else section[:97] + "..."
    short = doc_short_name(doc.doc_id)
    return f"{short} | {section}" if section else short


def _assemble(doc: Document, drafts: list[_Draft], config: ChunkConfig) -> tuple[list[Parent], list[Child]]:
    slug = doc_slug(doc.doc_id)
    ordinals: dict[tuple, int] = {}
    parents: list[Parent] = []
    seen: set[str] = set()
    for d in drafts:
        key = (d.kind, tuple(d.heading_path))
        ordinals[key] = ordinals.get(key, 0) + 1
        digest = hashlib.sha1("\x1f".join([d.kind, *d.heading_path, str(ordinals[key])]).encode()).hexdigest()
        pid = f"{slug}:{digest[:10]}"
        while pid in seen:  # practically never; keeps ids unique without breaking determinism
            digest = hashlib.sha1(digest.encode()).hexdigest()
            pid = f"{slug}:{digest[:10]}"
        seen.add(pid)
        parents.append(Parent(id=pid, doc=doc.doc_id, title=doc.title, heading_path=list(d.heading_path),
                              kind=d.kind, text=d.text, page=d.page))
    for i, p in enumerate(parents):
        p.prev_id = parents[i - 1].id if i > 0 else None
        p.next_id = parents[i + 1].id if i + 1 < len(parents) else None
    by_group: dict[int, list[str]] = {}
    for d, p in zip(drafts, parents):
        if d.group is not None:
            by_group.setdefault(d.group, []).append(p.id)
    for d, p in zip(drafts, parents):
        if d.group is not None:
            p.neighbours = [other for other in by_group[d.group] if other != p.id]
    children: list[Child] = []
    for d, p in zip(drafts, parents):
        prefix = context_prefix(doc, p.heading_path)
        for k, content in enumerate(c for c in d.children if c.strip()):
            children.append(Child(id=f"{p.id}-{k}", parent_id=p.id, doc=doc.doc_id, kind=p.kind,
                                  text=f"{prefix}\n{content}",
                                  in_bm25=len(content.strip()) >= config.min_child_chars))
    return parents, children

"""Stages 5-6: diversity caps, parent expansion and the token budget.

Why: children are small so that search is precise, but the reader needs the semantic unit around
a hit (the whole table, the list with its lead-in). Several children of one parent become one
passage; a per-section cap (tighter for figures) stops near-duplicate chunks from filling the
window; and everything is fitted into `context_tokens`, shared by how strongly the ranking backs
each passage (evidence_weight), trimming long parents around the sentences/rows that matched
rather than cutting them blindly at the end. What else was tried here and removed:
docs/decisions.md, "Retrieval: what reaches the reader" and "Ablation with the second embedder".
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ...config import AnswerSettings, RetrievalSettings
from ..text import count_tokens, ngrams, split_sentences
from ..vocabulary import TRIM_STOPWORDS
from ..types import Candidate, Parent, Passage

ELLIPSIS = "[…]"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[*|#`]", " ", text)).strip().lower()


@dataclass
class ExpandConfig:
    """The stage's parameters. The retriever sets them from settings; the defaults are the
    settings' own (config.RetrievalSettings, config.AnswerSettings), so direct callers see the same behaviour."""
    k: int = AnswerSettings.k  # passages (parents) handed to the reader
    budget_tokens: int = AnswerSettings.context_tokens
    max_per_section: int = RetrievalSettings.max_per_section  # distinct parents from one heading path
    max_per_figure: int = RetrievalSettings.max_per_figure  # distinct figure parents from one heading path (captions repeat)
    min_passage_tokens: int = 60  # below this a trimmed passage is useless: drop the tail instead
    weighted_budget: bool = RetrievalSettings.weighted_budget  # share the budget by evidence weight
    join_split_prose: bool = RetrievalSettings.join_split_prose  # a neighbouring prose hit joins a chosen passage


@dataclass
class Piece:
    """One parent's text inside a passage: the hit parent, or a prose neighbour that joined it."""
    parent: Parent
    hit_texts: list[str] = field(default_factory=list)  # child texts that matched inside it
    hit_positions: list[int] = field(default_factory=list)  # their 1-based positions in the ranked list


@dataclass
class Slot:
    """One passage under construction."""
    parent: Parent  # the best-ranked parent; its id/metadata label the passage
    score: float
    pieces: list[Piece]
    hits: list[str] = field(default_factory=list)  # child ids merged into this passage
    text: str = ""
    trimmed: bool = False

    def piece(self, parent_id: str) -> Piece | None:
        return next((p for p in self.pieces if p.parent.id == parent_id), None)


def _cap_key(parent: Parent) -> tuple:
    return (parent.doc, tuple(parent.heading_path), parent.kind == "figure")


_RUNNING_TEXT = ("prose",)


def _continued_in(parent: Parent, parents: dict[str, Parent], owner: dict) -> tuple | None:
    """(slot, neighbour) when `parent` is prose that directly precedes or follows a chosen prose
    parent of the same section: the two are one run of text that only the parent size limit split,
    so a hit on the second belongs in the first's passage, not in a slot of its own."""
    if parent.kind not in _RUNNING_TEXT:
        return None
    for nid in (parent.prev_id, parent.next_id):
        slot = owner.get(nid)
        neighbour = parents.get(nid) if nid else None
        if slot is not None and neighbour is not None and neighbour.kind in _RUNNING_TEXT and \
                neighbour.doc == parent.doc and neighbour.heading_path == parent.heading_path and \
                slot.piece(nid) is not None:
            return slot, neighbour
    return None


def select(candidates: list[Candidate], parents: dict[str, Parent], cfg: ExpandConfig,
           child_text: dict[str, str] | None = None) -> tuple[list[Slot], list[dict]]:
    """Walk the ranked candidates into at most k passages; returns (slots, cap decisions for the trace)."""
    child_text = child_text or {}
    slots: list[Slot] = []
    owner: dict[str, Slot] = {}  # parent id -> slot holding it
    per_key: dict[tuple, int] = {}
    capped: list[Candidate] = []
    decisions: list[dict] = []
    seen_text: dict[str, Slot] = {}

    position = {id(c): n for n, c in enumerate(candidates, start=1)}

    def add_hit(slot: Slot, cand: Candidate, parent: Parent) -> None:
        piece = slot.piece(parent.id)
        if piece is None:
            piece = Piece(parent)
            slot.pieces.append(piece)
        if cand.child_id in child_text:
            piece.hit_texts.append(child_text[cand.child_id])
        piece.hit_positions.append(position[id(cand)])
        slot.hits.append(cand.child_id)

    def open_slot(cand: Candidate, parent: Parent) -> Slot:
        slot = Slot(parent, cand.score, [])
        add_hit(slot, cand, parent)
        owner[parent.id] = slot
        seen_text.setdefault(_norm(parent.text), slot)
        key = _cap_key(parent)
        per_key[key] = per_key.get(key, 0) + 1
        slots.append(slot)
        return slot

    for cand in candidates:
        parent = parents.get(cand.parent_id)
        if parent is None:
            continue
        if parent.id in owner:  # another child of a chosen parent
            add_hit(owner[parent.id], cand, parent)
            continue
        host = _continued_in(parent, parents, owner) if cfg.join_split_prose else None
        if host is not None:
            slot, neighbour = host
            at = slot.pieces.index(slot.piece(neighbour.id))
            slot.pieces.insert(at if neighbour.prev_id == parent.id else at + 1, Piece(parent))
            owner[parent.id] = slot
            add_hit(slot, cand, parent)
            decisions.append({"child": cand.child_id, "parent": parent.id, "action": "joined-prose",
                              "into": slot.parent.id})
            continue
        dup = seen_text.get(_norm(parent.text))
        if dup is not None:  # identical text under another id (repeated caption, copied table)
            dup.hits.append(cand.child_id)
            owner[parent.id] = dup
            decisions.append({"child": cand.child_id, "parent": parent.id, "action": "merged-duplicate",
                              "into": dup.parent.id})
            continue
        if len(slots) >= cfg.k:
            continue
        key = _cap_key(parent)
        cap = cfg.max_per_figure if key[2] else cfg.max_per_section
        if per_key.get(key, 0) >= cap:
            capped.append(cand)
            decisions.append({"child": cand.child_id, "parent": parent.id, "action": "capped",
                              "section": parent.section, "cap": cap})
            continue
        open_slot(cand, parent)
    # Backfill: caps exist to make room for other material; when there is none, use capped ones.
    for cand in capped:
        if len(slots) >= cfg.k:
            break
        parent = parents[cand.parent_id]
        if parent.id in owner:
            add_hit(owner[parent.id], cand, parent)
            continue
        open_slot(cand, parent)
        decisions.append({"child": cand.child_id, "parent": parent.id, "action": "backfilled"})
    return slots, decisions


LONG_UNIT_TOKENS = 60  # a longer line (a big table row, a long paragraph) is split into sentences
_CELL = re.compile(r"\s\|\s")


@dataclass
class Unit:
    line: int  # source line: units of one line render on one line again
    text: str


def _units(parent: Parent) -> list[Unit]:
    """Trim units: one per line (table row, list item, paragraph), long lines split into sentences
    (and table rows at cell borders) so one huge row cannot be all-or-nothing."""
    out: list[Unit] = []
    lines = [ln for ln in parent.text.split("\n") if ln.strip()]
    for n, ln in enumerate(lines):
        if count_tokens(ln) <= LONG_UNIT_TOKENS:
            out.append(Unit(n, ln))
            continue
        cells = _CELL.split(ln) if parent.kind == "table" else [ln]
        for cell in cells:
            out.extend(Unit(n, s) for s in split_sentences(cell, style="plain"))
    return out


def _header_count(parent: Parent, units: list[Unit]) -> int:
    """Leading units that label the rest (table caption + header + separator, or a list's lead-in)."""
    if parent.kind == "table":
        for i, u in enumerate(units[:8]):
            if re.fullmatch(r"\s*\|?\s*:?-{2,}.*", u.text):
                return i + 1
        return 1
    return 1 if parent.kind in ("list", "figure") and len(units) > 1 and units[1].line != units[0].line else 0


def _shingles(text: str) -> set[tuple[str, ...]]:
    return set(ngrams(re.findall(r"\w+", _norm(text)), short_whole=True))


HIT_RANK_DECAY = 0.8  # weight of the n-th best matching child's overlap: DECAY ** n


def _unit_scores(units: list[Unit], hit_texts: list[str], terms: set[str]) -> list[float]:
    """10 x share of the unit's word trigrams found in a matched child, plus query-term overlap.

    Matched children arrive best first, and each later one counts a little less
    (HIT_RANK_DECAY ** n): when many rows of one big table matched (every row's text carries the
    caption that holds the query's identifier), the row that ranked first must survive trimming
    ahead of rows that only share the caption.
    """
    hits = [_shingles(h) for h in hit_texts]
    scores = []
    for u in units:
        sh = _shingles(u.text)
        inside = max((len(sh & h) / len(sh) * HIT_RANK_DECAY ** n for n, h in enumerate(hits)), default=0.0) \
            if sh else 0.0
        words = set(re.findall(r"\w+", _norm(u.text)))
        scores.append(10.0 * inside + len(words & terms) / (1 + math.log1p(len(words))))
    return scores


def trim(piece: Piece, budget: int, terms: set[str]) -> str:
    """Keep the header units and the best-matching units (in document order) within `budget` tokens."""
    units = _units(piece.parent)
    everything = set(range(len(units)))
    if count_tokens(_render(units, everything)) <= budget:
        return _render(units, everything)
    head = min(_header_count(piece.parent, units), len(units))
    keep = set(range(head))
    used = sum(count_tokens(units[i].text) for i in keep)
    scores = _unit_scores(units, piece.hit_texts, terms)
    best = max(range(len(units)), key=lambda i: (scores[i], -i)) if units else 0
    order = sorted(range(len(units)), key=lambda i: (-scores[i], abs(i - best), i))
    for i in order:
        cost = count_tokens(units[i].text)
        if i not in keep and used + cost <= budget:
            keep.add(i)
            used += cost
    if len(keep) <= head and units:  # nothing beyond the header fits: cut the best unit itself
        units = list(units)
        units[best] = Unit(units[best].line, " ".join(units[best].text.split()[: max(8, budget - used)]))
        keep.add(best)
    text = _render(units, keep)
    droppable = [i for i in sorted(keep, key=lambda i: (scores[i], -abs(i - best))) if i >= head and i != best]
    while count_tokens(text) > budget and droppable:  # gap markers cost tokens too
        keep.discard(droppable.pop(0))
        text = _render(units, keep)
    return text


def _render(units: list[Unit], keep: set[int]) -> str:
    """Kept units in order; same-line units rejoin with a space, gaps show as an ellipsis mark."""
    out: list[str] = []
    last = -1
    for i in sorted(keep):
        gap = i != last + 1
        if gap:
            out.append(("\n" if out else "") + ELLIPSIS)
        same_line = last >= 0 and not gap and units[i].line == units[last].line
        out.append((" " if same_line or gap else "\n") + units[i].text if out else units[i].text)
        last = i
    if last < len(units) - 1:
        out.append("\n" + ELLIPSIS if out else ELLIPSIS)
    return "".join(out).strip()


def _allocate(sizes: list[int], budget: int, weights: list[float] | None = None, floor: int = 0) -> list[int]:
    """Weighted water-filling: every passage first gets `floor` tokens, or all of itself if smaller, then the rest is shared in proportion to `weights`; a passage whose
    share exceeds its size keeps all of itself and the surplus is shared again among the others.
    Equal weights = equal shares."""
    n = len(sizes)
    weights = list(weights) if weights and sum(weights) > 0 else [1.0] * n
    alloc = [min(s, floor) for s in sizes]
    left = budget - sum(alloc)
    open_ = [i for i in range(n) if sizes[i] > alloc[i]]
    while open_ and left > 0:
        total = sum(weights[i] for i in open_) or float(len(open_))
        share = {i: left * (weights[i] if total else 1.0) / total for i in open_}
        done = [i for i in open_ if sizes[i] - alloc[i] <= share[i]]
        if not done:
            for i in open_:
                alloc[i] += int(share[i])
            break
        for i in done:
            left -= sizes[i] - alloc[i]
            alloc[i] = sizes[i]
            open_.remove(i)
    return alloc


RANK_K = 2  # a matching child at position p is worth 1 / (RANK_K + p), as in RRF
HIT_DECAY = 0.5  # the n-th matching child of one passage counts HIT_DECAY ** n of its own worth


def evidence_weight(positions: list[int]) -> float:
    """How strongly the ranking backs a passage: its matching children's rank values, best first,
    each further one discounted (a big table whose every row carries the query's words must not
    outweigh a passage that ranked first on its own merits)."""
    return sum(HIT_DECAY ** n / (RANK_K + p) for n, p in enumerate(sorted(positions)))


def slot_weight(slot: Slot) -> float:
    """A passage's claim on the budget: the sum of its pieces' evidence weights, so a joined prose
    neighbour or a matching table segment brings the share it would have had as its own passage."""
    return sum(evidence_weight(p.hit_positions) for p in slot.pieces)


def _slot_text(slot: Slot, budget: int | None, terms: set[str]) -> str:
    if budget is None:
        return "\n".join(p.parent.text.strip() for p in slot.pieces)
    full = [count_tokens(p.parent.text) for p in slot.pieces]
    if sum(full) <= budget:
        return "\n".join(p.parent.text.strip() for p in slot.pieces)
    # The pieces (a parent and the prose neighbours that joined it) share the budget by how
    # strongly they matched.
    alloc = _allocate(full, budget, [evidence_weight(p.hit_positions) for p in slot.pieces])
    return "\n".join(trim(p, a, terms) for p, a in zip(slot.pieces, alloc))


def fit(slots: list[Slot], budget: int, query: str, cfg: ExpandConfig) -> list[Slot]:
    """Fit passages into `budget` tokens: drop the lowest-ranked ones if each would get too little,
    then share the budget by evidence weight (see evidence_weight) above a floor for each."""
    terms = set(re.findall(r"\w+", _norm(query))) - TRIM_STOPWORDS
    slots = list(slots)
    while slots and budget // len(slots) < cfg.min_passage_tokens and len(slots) > 1:
        slots.pop()
    sizes = [sum(count_tokens(p.parent.text) for p in s.pieces) for s in slots]
    weights = [slot_weight(s) for s in slots] \
        if cfg.weighted_budget else None
    floor = cfg.min_passage_tokens if cfg.weighted_budget else 0
    alloc = _allocate(sizes, budget, weights, floor=floor)
    for slot, size, a in zip(slots, sizes, alloc):
        slot.text = _slot_text(slot, None if size <= a else a, terms)
        slot.trimmed = size > a
    return slots


def to_passages(slots: list[Slot]) -> list[Passage]:
    """Passages in reader order: best first (rank 1), which is also the order they are cited by."""
    return [Passage(rank=i, id=s.parent.id, doc=s.parent.doc, title=s.parent.title, section=s.parent.section,
                    kind=s.parent.kind, page=s.parent.page, text=s.text, score=round(float(s.score), 6))
            for i, s in enumerate(slots, start=1)]


def expand(candidates: list[Candidate], parents: dict[str, Parent], query: str, cfg: ExpandConfig,
           child_text: dict[str, str] | None = None) -> tuple[list[Passage], list[Slot], list[dict]]:
    """Candidates -> passages that fit the budget; also returns the slots and cap decisions for the trace."""
    slots, decisions = select(candidates, parents, cfg, child_text)
    slots = fit(slots, cfg.budget_tokens, query, cfg)
    return to_passages(slots), slots, decisions

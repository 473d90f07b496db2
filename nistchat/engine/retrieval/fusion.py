"""Stage 3: reciprocal-rank fusion of the dense and BM25 candidate lists.

Why RRF: cosine similarities and BM25 scores live on unrelated scales, and BM25's scale changes
with the query length. RRF only looks at ranks (score = sum of weight / (k + rank)), so it needs
no calibration and one retriever cannot drown the other by having bigger numbers.
"""
from __future__ import annotations

from ..types import Candidate

DEFAULT_K = 60


def rrf(lists: dict[str, list[tuple[str, float]]], *, k: int = DEFAULT_K,
        weights: dict[str, float] | None = None, parent_of: dict[str, str] | None = None) -> list[Candidate]:
    """Fuse ranked lists of (child id, retriever score), best first, into one list of Candidates.

    Ranks are 1-based. Ties in the fused score keep the order of first appearance (dense before
    BM25 when lists are passed in that order) so the output is deterministic.
    """
    if k < 0:
        raise ValueError("RRF k must be >= 0")
    weights = weights or {}
    parent_of = parent_of or {}
    fused: dict[str, Candidate] = {}
    order: dict[str, int] = {}
    for name, ranked in lists.items():
        weight = float(weights.get(name, 1.0))
        seen: set[str] = set()
        for rank, (child_id, score) in enumerate(ranked, start=1):
            if child_id in seen:  # a list repeating an id counts only its best rank
                continue
            seen.add(child_id)
            cand = fused.get(child_id)
            if cand is None:
                cand = fused[child_id] = Candidate(child_id, parent_of.get(child_id, ""), 0.0)
                order[child_id] = len(order)
            cand.ranks[name] = rank
            cand.scores[name] = float(score)
            cand.score += weight / (k + rank)
    for cand in fused.values():
        cand.scores["rrf"] = cand.score
    return sorted(fused.values(), key=lambda c: (-c.score, order[c.child_id]))


def single(name: str, ranked: list[tuple[str, float]], parent_of: dict[str, str] | None = None) -> list[Candidate]:
    """One retriever's list as Candidates with its own score kept (dense-only / BM25-only modes)."""
    parent_of = parent_of or {}
    out, seen = [], set()
    for rank, (child_id, score) in enumerate(ranked, start=1):
        if child_id in seen:
            continue
        seen.add(child_id)
        out.append(Candidate(child_id, parent_of.get(child_id, ""), float(score), {name: rank},
                             {name: float(score)}))
    return out


def by_parent(candidates: list[Candidate], *, decay: float = 0.5, k: int = DEFAULT_K) -> list[Candidate]:
    """Regroup children so parents come in order of their aggregated evidence.

    Why: the reader gets parents, and a parent several of whose children matched (a list whose
    items each answer part of the question, a table whose rows do) is better evidence than one
    lucky sentence. A parent scores sum(value_i * decay**i) over its children's fused values, best
    first (value = RRF score, or 1/(k + position) for a single retriever's list). decay=0 is plain
    max-child ranking. Children keep their own order inside a parent.
    """
    values: dict[str, list[float]] = {}
    first: dict[str, int] = {}
    for pos, c in enumerate(candidates, start=1):
        v = c.scores.get("rrf", 1.0 / (k + pos))
        values.setdefault(c.parent_id, []).append(v)
        first.setdefault(c.parent_id, pos)
    agg = {p: sum(v * decay ** i for i, v in enumerate(sorted(vs, reverse=True))) for p, vs in values.items()}
    for c in candidates:
        c.scores["parent"] = agg[c.parent_id]
    return sorted(candidates, key=lambda c: (-agg[c.parent_id], first[c.parent_id]))

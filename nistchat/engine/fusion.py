"""Stage 3: reciprocal-rank fusion of the dense and BM25 candidate lists.

Why RRF: cosine similarities and BM25 scores live on unrelated scales, and BM25's scale changes
with the query length. RRF only looks at ranks (score = sum of weight / (k + rank)), so it needs
no calibration and one retriever cannot drown the other by having bigger numbers.
"""
from __future__ import annotations

from .types import Candidate

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

"""Stage 4: cross-encoder rerank of the top N fused candidates.

Why only the top N: a cross-encoder reads query and passage together, which is what separates
"mentions the words" from "answers the question", but it costs a model call per pair, so it sees
only the head of the fused list; the tail keeps its fused order below the reranked head.
When no reranker can be loaded the stage says so and keeps the fused order (FALLBACK) instead of
failing or hiding the gap: RRF's "found by both retrievers" is the better order without one
(docs/decisions.md, "Score-blend fallback (no cross-encoder)").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..types import Candidate

FALLBACK = "keep fused (RRF) order"


@dataclass
class RerankResult:
    candidates: list[Candidate]
    applied: bool
    note: str
    scored: list[tuple[str, float]] = field(default_factory=list)  # (child id, cross-encoder score)


def rerank(query: str, candidates: list[Candidate], reranker, *, top_n: int,
           text_of: Callable[[Candidate], str], missing_reason: str = "") -> RerankResult:
    """Reorder the first `top_n` candidates by cross-encoder score; the rest follow unchanged."""
    if reranker is None:
        why = missing_reason or "no reranker loaded"
        return RerankResult(list(candidates), False, f"reranker unavailable ({why}); fallback: {FALLBACK}")
    if top_n <= 0 or not candidates:
        return RerankResult(list(candidates), False, f"rerank disabled (top_n={top_n}); fallback: {FALLBACK}")
    head, tail = candidates[:top_n], candidates[top_n:]
    scores = reranker.score(query, [text_of(c) for c in head])
    if len(scores) != len(head):
        raise ValueError(f"reranker returned {len(scores)} scores for {len(head)} texts")
    for cand, s in zip(head, scores):
        cand.scores["rerank"] = float(s)
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))  # stable on ties
    reranked = [head[i] for i in order]
    for rank, cand in enumerate(reranked, start=1):
        cand.ranks["rerank"] = rank
        cand.score = cand.scores["rerank"]
    name = getattr(reranker, "name", type(reranker).__name__)
    return RerankResult(reranked + tail, True, f"reranked top {len(head)} with {name}",
                        [(c.child_id, c.scores["rerank"]) for c in reranked])

"""Stage 4 fallback: with no cross-encoder loaded, re-score the head of the fused list from the
retrievers' own scores and the shape of answer the question asks for.

Why not keep the RRF order: RRF looks only at ranks, so a passage one retriever ranks 2nd and
the other misses (a paraphrase BM25 cannot see, a rare phrase the embedder blurs) falls behind
passages both rank 15th. A convex blend of each list's min-max normalised scores keeps a strong
single-retriever match strong (Bruch et al., "An Analysis of Fusion Functions for Hybrid
Retrieval", 2023). The shape prior adds what neither retriever sees: "list the X" or "what are
the six X" is answered by a list or a table, and best by one with six items.
RRF stays the fusion stage, since a cross-encoder wants its recall-minded order as input.

Not the default (`[retrieval] fallback = "blend"` turns it on): it ranks better overall but
loses evidence that both retrievers rank low, where RRF's "found by both" still wins
(numbers: docs/decisions.md).
"""
from __future__ import annotations

from ..config import BlendSettings
from .shape import LIST_KINDS, item_count, states_number
from .types import Candidate, Parent

RULE = ("blend of min-max normalised dense, BM25 and exact-id scores, plus priors for a document the "
        "question names and, for list questions, lists and tables")


def normalised(ranked: list[tuple[str, float]]) -> dict[str, float]:
    """child id -> score scaled so the list's best is 1 and its last is 0."""
    if not ranked:
        return {}
    scores = [s for _, s in ranked]
    hi, lo = max(scores), min(scores)
    span = hi - lo
    out: dict[str, float] = {}
    for cid, s in ranked:
        out.setdefault(cid, (s - lo) / span if span > 0 else 1.0)
    return out


def blend(candidates: list[Candidate], lists: dict[str, list[tuple[str, float]]], parents: dict[str, Parent],
          cfg: BlendSettings, *, wants_list: bool = False, count: int | None = None,
          docs: list[str] | None = None) -> list[Candidate]:
    """Re-score the first `cfg.top_n` candidates (score and scores["blend"]); the tail keeps its order."""
    head, tail = candidates[: cfg.top_n], candidates[cfg.top_n:]
    dense, bm25 = normalised(lists.get("dense", [])), normalised(lists.get("bm25", []))
    exact_rank: dict[str, int] = {}
    for rank, (cid, _) in enumerate(lists.get("exact", []), start=1):
        exact_rank.setdefault(cid, rank)
    for cand in head:
        score = cfg.dense * dense.get(cand.child_id, 0.0) + cfg.bm25 * bm25.get(cand.child_id, 0.0)
        if cand.child_id in exact_rank:
            score += cfg.exact / exact_rank[cand.child_id] ** 0.5
        parent = parents.get(cand.parent_id)
        if docs and parent is not None and parent.doc in docs:
            score += cfg.doc_bonus
        if wants_list and parent is not None and parent.kind in LIST_KINDS:
            score += cfg.list_bonus
            if count and item_count(parent) == count and states_number(parent.text, count):
                score += cfg.count_bonus
        cand.scores["blend"] = score
    order = sorted(range(len(head)), key=lambda i: (-head[i].scores["blend"], i))
    reordered = [head[i] for i in order]
    for rank, cand in enumerate(reordered, start=1):
        cand.ranks["blend"] = rank
        cand.score = cand.scores["blend"]
    return reordered + tail

"""Refusals: before generation when retrieval is clearly off-topic, after it when the reader
declines or nothing it wrote is supported. A refusal says what the corpus covers and points to
the closest sources, so the user knows where to look instead.

The pre-generation gate compares one retrieval score with a threshold calibrated on the golden
set (scripts/calibrate_refusal.py), never picked by feel.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .types import Passage, Retrieval

# The seven publications the index is built from (what a refusal tells the user the bot covers).
CORPUS_COVERS = [
    "NIST AI 100-1, AI Risk Management Framework (AI RMF 1.0)",
    "NIST AI 100-2e2023, Adversarial Machine Learning: a taxonomy of attacks and mitigations",
    "NIST AI 100-5, A Plan for Global Engagement on AI Standards",
    "NIST AI 600-1, AI RMF Generative AI Profile",
    "NIST AI 800-4, Challenges to the Monitoring of Deployed AI Systems",
    "Concept Note: AI RMF Trustworthy AI in Critical Infrastructure Profile",
    "NIST SP 800-218A, Secure Software Development Practices for Generative AI and Dual-Use Foundation Models",
]

# Pre-generation gate. Feature: the cosine similarity between the question and the closest child
# chunk (the top of the dense stage, all-MiniLM-L6-v2 embeddings). Threshold derived by
# scripts/calibrate_refusal.py on data/eval/golden.jsonl (12 negatives vs 76 answerable questions):
# the largest threshold that wrongly refuses at most 5 % of answerable questions, leaving the rest
# of the refusal budget to the post-generation checks. Re-run the script after changing the
# embedder, the chunking or the golden set; override with settings.extra["refusal_threshold"].
REFUSAL_FEATURE = "dense_max"
REFUSAL_THRESHOLD = 0.30  # placeholder until calibrated; see scripts/calibrate_refusal.py


@dataclass
class Gate:
    score: float | None
    threshold: float
    feature: str
    refuse: bool

    def to_dict(self) -> dict:
        return {"score": None if self.score is None else round(self.score, 4), "threshold": self.threshold,
                "feature": self.feature, "refuse": self.refuse}


def dense_max(retrieval: Retrieval, embedder=None) -> float | None:
    """Top dense cosine from the retrieval trace; computed from the passages if the trace lacks it."""
    stage = retrieval.trace.stage("dense")
    if stage is not None and stage.items:
        return max(float(item.get("score", 0.0)) for item in stage.items)
    if embedder is None or not retrieval.passages:
        return None
    vectors = embedder.embed([retrieval.question] + [p.text for p in retrieval.passages])
    return float(np.max(vectors[1:] @ vectors[0]))


def rerank_max(retrieval: Retrieval, embedder=None) -> float | None:
    """Top cross-encoder score, when a reranker ran."""
    stage = retrieval.trace.stage("rerank")
    if stage is None or not stage.items:
        return None
    return max(float(item.get("score", 0.0)) for item in stage.items)


FEATURES = {"dense_max": dense_max, "rerank_max": rerank_max}


def settings_gate(settings) -> tuple[str, float]:
    extra = getattr(settings, "extra", None) or {}
    return (str(extra.get("refusal_feature", REFUSAL_FEATURE)),
            float(extra.get("refusal_threshold", REFUSAL_THRESHOLD)))


def gate(retrieval: Retrieval, settings, embedder=None) -> Gate:
    """Refuse before generation when nothing was retrieved or the score is under the threshold.
    A missing feature (e.g. no reranker) never refuses on its own: the post-generation checks remain."""
    feature, threshold = settings_gate(settings)
    if not retrieval.passages:
        return Gate(None, threshold, feature, True)
    score = FEATURES[feature](retrieval, embedder)
    return Gate(score, threshold, feature, score is not None and score < threshold)


def message(passages: list[Passage], reason: str = "") -> str:
    """What a refusal says: the documents don't answer this, what they do cover, where to look."""
    lines = ["I can't answer that from the NIST documents I have" + (f" ({reason})." if reason else ".")]
    lines.append("They cover: " + "; ".join(CORPUS_COVERS) + ".")
    if passages:
        closest = []
        for i, p in enumerate(passages[:3], 1):
            where = f"{p.doc}, {p.section}" if p.section else p.doc
            closest.append(f"[{i}] {where}" + (f" (p. {p.page})" if p.page is not None else ""))
        lines.append("Closest sources: " + "; ".join(closest) + ".")
    return "\n".join(lines)

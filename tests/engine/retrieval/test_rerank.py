"""Rerank stage: real cross-encoder plumbing, and an explicit fallback when no model is loaded."""
from pathlib import Path

import pytest

from nistchat.engine.retrieval.rerank import FALLBACK, rerank
from nistchat.engine.types import Candidate
from tests.conftest import MODELS_DIR

MINILM = MODELS_DIR / "all-MiniLM-L6-v2"
TEXTS = {"a": "Bananas are yellow fruit.", "b": "Monitoring deployed AI systems for drift.",
         "c": "The AI RMF core has four functions.", "d": "tail item"}


def cands():
    return [Candidate(cid, f"P{cid}", 1.0 / (i + 61), {"rrf": i + 1}) for i, cid in enumerate("abcd")]


class Reversing:
    name = "reversing"

    def score(self, query, texts):
        return [float(i) for i in range(len(texts))]


def test_absent_reranker_keeps_fused_order_and_says_why():
    out = rerank("q", cands(), None, top_n=3, text_of=lambda c: TEXTS[c.child_id],
                 missing_reason="Cross-encoder reranker not found at /x")
    assert [c.child_id for c in out.candidates] == list("abcd")
    assert not out.applied and "not found at /x" in out.note and FALLBACK in out.note


def test_reranker_reorders_only_the_window():
    out = rerank("q", cands(), Reversing(), top_n=3, text_of=lambda c: TEXTS[c.child_id])
    assert [c.child_id for c in out.candidates] == ["c", "b", "a", "d"]
    assert out.applied and out.candidates[0].scores["rerank"] == 2.0 and out.candidates[0].ranks["rerank"] == 1
    assert "rerank" not in out.candidates[3].scores  # outside the window: untouched
    assert [cid for cid, _ in out.scored] == ["c", "b", "a"]


def test_wrong_score_count_is_an_error():
    class Broken:
        def score(self, q, texts):
            return [1.0]
    with pytest.raises(ValueError):
        rerank("q", cands(), Broken(), top_n=3, text_of=lambda c: "")


@pytest.mark.skipif(not MINILM.is_dir(), reason="MiniLM checkpoint not provisioned")
def test_real_cross_encoder_plumbing():
    # The MiniLM bi-encoder checkpoint loaded as a CrossEncoder has a randomly initialised head:
    # the scores mean nothing, but the call path (tokenise pairs, predict, reorder) is the real one.
    from nistchat.engine.backends.embedded import CrossEncoderReranker

    model = CrossEncoderReranker(MINILM)
    out = rerank("how are AI systems monitored?", cands(), model, top_n=4, text_of=lambda c: TEXTS[c.child_id])
    assert out.applied and len(out.scored) == 4
    scores = [c.scores["rerank"] for c in out.candidates]
    assert scores == sorted(scores, reverse=True) and all(isinstance(s, float) for s in scores)
    assert sorted(c.child_id for c in out.candidates) == list("abcd")

"""The score-blend fallback: min-max normalisation, a strong single-retriever match kept, shape priors."""
import pytest

from nistchat.config import BlendSettings
from nistchat.engine.score_blend import blend, normalised
from nistchat.engine.types import Candidate


def test_normalised_scales_best_to_one_and_last_to_zero():
    assert normalised([("a", 9.0), ("b", 6.0), ("c", 3.0)]) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert normalised([("a", 2.0)]) == {"a": 1.0} and normalised([]) == {}


def test_blend_keeps_a_strong_single_retriever_match_and_applies_priors(parent):
    parents = {"both": parent("both", "x"), "dense_top": parent("dense_top", "x"),
               "lst": parent("lst", "The three steps:\n- a\n- b\n- c", "list", doc="E")}
    cands = [Candidate("both-0", "both", 0.03), Candidate("dense_top-0", "dense_top", 0.016),
             Candidate("lst-0", "lst", 0.015), Candidate("tail-0", "tail", 0.001)]
    lists = {"dense": [("dense_top-0", 0.9), ("both-0", 0.55), ("lst-0", 0.5)],
             "bm25": [("x", 6.0), ("both-0", 4.0), ("lst-0", 3.5), ("y", 1.0)]}
    out = blend(list(cands), lists, parents, BlendSettings(top_n=3))
    assert [c.child_id for c in out][:2] == ["dense_top-0", "both-0"]  # RRF had "both" first
    assert out[-1].child_id == "tail-0" and "blend" not in out[-1].scores  # outside the window
    shaped = blend([Candidate(c.child_id, c.parent_id, 0.0) for c in cands], lists, parents,
                   BlendSettings(top_n=3), wants_list=True, count=3, docs=["E"])
    assert shaped[0].child_id == "lst-0"
    assert shaped[0].scores["blend"] == pytest.approx(0.5 * 0.0 + 0.5 * 0.5 + 0.1 + 0.5 + 0.2)

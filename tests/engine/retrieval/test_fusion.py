"""RRF math: rank-only, weighted, deterministic."""
import pytest

from nistchat.engine.retrieval.fusion import rrf, single


def test_rrf_scores_are_sum_of_reciprocal_ranks():
    fused = rrf({"dense": [("a", 0.9), ("b", 0.8)], "bm25": [("b", 12.0), ("c", 3.0)]}, k=60)
    scores = {c.child_id: c.score for c in fused}
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["c"] == pytest.approx(1 / 62)
    assert [c.child_id for c in fused] == ["b", "a", "c"]
    b = fused[0]
    assert b.ranks == {"dense": 2, "bm25": 1} and b.scores["bm25"] == 12.0 and b.scores["rrf"] == b.score


def test_rrf_is_scale_free():
    a = rrf({"dense": [("x", 0.9), ("y", 0.1)], "bm25": [("y", 100.0), ("x", 1.0)]})
    b = rrf({"dense": [("x", 0.51), ("y", 0.50)], "bm25": [("y", 1e-6), ("x", 1e-9)]})
    assert [(c.child_id, c.score) for c in a] == [(c.child_id, c.score) for c in b]


def test_tie_keeps_first_appearance_order():
    fused = rrf({"dense": [("a", 1.0)], "bm25": [("b", 1.0)]})
    assert [c.child_id for c in fused] == ["a", "b"]


def test_weights_change_the_winner():
    lists = {"dense": [("a", 1.0), ("b", 0.5)], "bm25": [("b", 9.0), ("a", 1.0)]}
    assert rrf(lists, weights={"dense": 1.0, "bm25": 2.0})[0].child_id == "b"
    assert rrf(lists, weights={"dense": 2.0, "bm25": 1.0})[0].child_id == "a"


def test_k_trades_a_single_top_rank_against_agreement():
    lists = {"dense": [("a", 1), ("x", 1), ("b", 1)], "bm25": [("c", 1), ("y", 1), ("b", 1)]}
    assert rrf(lists, k=0)[0].child_id == "a"  # 1/1 beats 1/3 + 1/3
    assert rrf(lists, k=60)[0].child_id == "b"  # 2/63 beats 1/61: both retrievers agree on b


def test_duplicate_ids_in_a_list_count_once_and_parents_attach():
    fused = rrf({"dense": [("a", 1.0), ("a", 0.5)]}, parent_of={"a": "P"})
    assert len(fused) == 1 and fused[0].score == pytest.approx(1 / 61) and fused[0].parent_id == "P"


def test_negative_k_rejected():
    with pytest.raises(ValueError):
        rrf({}, k=-1)


def test_single_keeps_native_scores():
    out = single("bm25", [("a", 7.5), ("b", 2.0)], {"a": "P"})
    assert [(c.child_id, c.score, c.ranks["bm25"], c.parent_id) for c in out] == [("a", 7.5, 1, "P"), ("b", 2.0, 2, "")]

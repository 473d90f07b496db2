"""The retriever on the real corpus index (session fixture `runtime`): contract, trace, modes,
reranker fallback and plumbing, and the AI 800-4 monitoring categories reaching the context."""
import json
from pathlib import Path

import numpy as np
import pytest

from nistchat.config import ConfigError, RetrievalSettings, load_settings, updated
from nistchat.engine.index.sparse import FastBM25, bm25_tokenize
from nistchat.engine.retrieval.retriever import TIMING_KEYS, Retriever
from nistchat.engine.text import count_tokens
from nistchat.engine.types import Retrieval
from tests.conftest import MODELS_DIR

MINILM = MODELS_DIR / "all-MiniLM-L6-v2"


def retriever_with(runtime, reranker=None, config=None):
    """A retriever on the session's index and embedder, handed this reranker (None: none served)."""
    return Retriever(runtime.index, runtime.settings, embedder=runtime.models.embedder, reranker=lambda: reranker,
                     reranker_missing=lambda: "no cross-encoder in this test", config=config)


@pytest.fixture(scope="module")
def retriever(runtime):
    return runtime.retriever


def test_contract(retriever, runtime):
    r = retriever.retrieve("What does GOVERN 1.2 in the AI RMF say?", k=6)
    assert isinstance(r, Retrieval)
    assert [p.rank for p in r.passages] == [1, 2, 3, 4, 5, 6]
    assert len({p.id for p in r.passages}) == 6
    assert set(r.timings_ms) == set(TIMING_KEYS)
    assert r.timings_ms["total"] >= r.timings_ms["dense"] and r.timings_ms["total"] > 0
    for p in r.passages:
        parent = runtime.index.parents[p.id]
        assert (p.doc, p.title, p.section, p.kind, p.page) == \
            (parent.doc, parent.title, parent.section, parent.kind, parent.page)
        assert p.text.strip()
    assert [s.name for s in r.trace.stages] == ["query", "embed", "dense", "bm25", "exact", "fuse", "rerank", "caps", "expand"]
    assert r.trace.stage("dense").items[0]["score"] >= r.trace.stage("dense").items[-1]["score"]
    d = r.to_dict()
    assert set(d) == {"question", "passages", "trace", "timings_ms"}


def test_identifier_query_finds_its_row(retriever):
    r = retriever.retrieve("What does GOVERN 1.2 say?", k=6)
    assert any("GOVERN 1.2" in p.text and p.doc == "NIST.AI.100-1" for p in r.passages[:3])


def test_k_and_budget(retriever, runtime):
    for k in (1, 3, 8):
        r = retriever.retrieve("How should organizations monitor AI systems after deployment?", k=k)
        assert 1 <= len(r.passages) <= k
        assert sum(count_tokens(p.text) for p in r.passages) <= runtime.settings.answer.context_tokens
    with pytest.raises(ValueError):
        retriever.retrieve("x", k=0)
    with pytest.raises(ValueError):
        retriever.retrieve("x", mode="fancy")


def test_single_retriever_modes(retriever):
    dense = retriever.retrieve("What is data poisoning?", mode="dense")
    assert dense.trace.stage("bm25") is None and dense.timings_ms["bm25"] == 0
    assert "dense only" in dense.trace.stage("fuse").note and dense.passages
    sparse = retriever.retrieve("What is data poisoning?", mode="bm25")
    assert sparse.trace.stage("dense") is None and sparse.timings_ms["embed"] == 0
    assert sparse.passages


def test_follow_up_uses_history(retriever):
    history = [{"role": "user", "content": "What is DP-SGD in the adversarial ML taxonomy?"},
               {"role": "assistant", "content": "A differentially private training algorithm."}]
    r = retriever.retrieve("and why is it hard to use?", history=history)
    q = r.trace.stage("query").items[0]
    assert q["rewritten"] and "DP-SGD" in q["search_text"]
    assert any("follow-up" in n for n in r.trace.notes)
    assert any(p.doc == "NIST.AI.100-2e2023" for p in r.passages[:3])


def test_absent_reranker_is_stated_and_order_kept(runtime):
    r = retriever_with(runtime)
    out = r.retrieve("What is confabulation?")
    stage = out.trace.stage("rerank")
    assert "reranker unavailable (no cross-encoder in this test)" in stage.note and "fallback" in stage.note
    assert stage.items == [] and any("reranker unavailable" in n for n in out.trace.notes)
    fused = [it["parent"] for it in out.trace.stage("fuse").items]
    first_parents = list(dict.fromkeys(fused))
    assert out.passages[0].id == first_parents[0]


@pytest.mark.skipif(not MINILM.is_dir(), reason="MiniLM checkpoint not provisioned")
def test_reranker_plumbing_with_a_real_checkpoint(runtime):
    from nistchat.engine.backends.embedded import CrossEncoderReranker

    model = CrossEncoderReranker(MINILM)  # random head: scores are real model outputs, not meaningful
    r = retriever_with(runtime, model, RetrievalSettings(rerank_top_n=8))
    out = r.retrieve("What is confabulation?")
    stage = out.trace.stage("rerank")
    assert len(stage.items) == 8 and "reranked top 8" in stage.note
    scores = [it["score"] for it in stage.items]
    assert scores == sorted(scores, reverse=True)
    assert not any("reranker unavailable" in n for n in out.trace.notes)


def test_fast_bm25_matches_rank_bm25(runtime):
    bm25 = runtime.index.bm25
    fast = FastBM25(bm25)
    for q in ("GOVERN 1.2 policies", "data poisoning attacks poisoning", "PW.1.1 risk modeling"):
        tokens = bm25_tokenize(q)
        assert np.allclose(fast.scores(tokens), bm25.get_scores(tokens))


def test_config_overrides_from_settings(tmp_path):
    (tmp_path / "config.toml").write_text("[retrieval]\ndense_depth = 7\nmax_per_section = 1\n", encoding="utf-8")
    cfg = load_settings(instance_dir=tmp_path, environ={}).retrieval
    assert cfg.dense_depth == 7 and cfg.max_per_section == 1 and cfg.bm25_depth == RetrievalSettings().bm25_depth
    (tmp_path / "config.toml").write_text("[retrieval]\nno_such_knob = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no_such_knob"):
        load_settings(instance_dir=tmp_path, environ={})


def test_exact_identifier_list(retriever):
    r = retriever.retrieve("What does PW.1.1 ask for?")
    items = r.trace.stage("exact").items
    assert items
    for it in items:
        text = retriever.child_text[it["child"]].lower()
        assert "pw.1.1" in text
    assert r.trace.stage("fuse").items[0]["ranks"].get("exact")  # the verbatim hit leads the fusion


def test_common_acronyms_are_not_exact_signals(retriever):
    assert retriever.exact.pattern("AI") is None  # in most children: says nothing
    r = retriever.retrieve("What does TEVV stand for?")
    texts = [retriever.child_text[it["child"]] for it in r.trace.stage("exact").items]
    assert texts and all("(TEVV)" in t or "TEVV:" in t or "TEVV " in t for t in texts)


def test_exact_ties_are_ordered_by_bm25(retriever):
    """Rows sharing a caption that holds the identifier tie in the exact list; BM25 breaks the tie."""
    q = "Which suggested action under MAP 5.1 calls for chaos testing?"
    r = retriever.retrieve(q)
    items = r.trace.stage("exact").items
    bm25 = dict(runtime_index_bm25(retriever, q))
    tied = [it for it in items if it["score"] == items[0]["score"]]
    assert len(tied) > 1
    values = [bm25.get(it["child"], 0.0) for it in tied]
    assert values == sorted(values, reverse=True)


def runtime_index_bm25(retriever, question: str):
    """Every child's BM25 score for the question, as the sparse search ranks them."""
    return retriever.index.sparse_search.search(retriever.tokenize(question), len(retriever.children)).ranked


def test_asking_what_a_common_acronym_stands_for_finds_its_definition(retriever):
    """GAI is in a quarter of all children (no exact signal for a question that merely uses it),
    but a question asking what it stands for gets its defining occurrences; AI stays out."""
    assert retriever.exact.pattern("GAI") is None
    assert retriever.exact.pattern("GAI", definition=True) is not None
    assert retriever.exact.pattern("AI", definition=True) is None
    r = retriever.retrieve("What does the abbreviation GAI stand for?")
    texts = [retriever.child_text[it["child"]] for it in r.trace.stage("exact").items]
    assert texts and all("(GAI)" in t or "GAI:" in t for t in texts)
    assert not retriever.retrieve("How should GAI risks be governed?").trace.stage("exact").items


def test_retrieval_config_rejects_unknown_settings():
    with pytest.raises(ConfigError, match="unknown setting retrieval.fallback"):
        updated(RetrievalSettings(), {"fallback": "blend"}, "retrieval")  # removed: no longer a setting
    with pytest.raises(ConfigError, match="unknown setting retrieval.rewrite.nope"):
        updated(RetrievalSettings(), {"rewrite": {"nope": 1}}, "retrieval")


def test_named_document_scopes_the_search(runtime):
    r = runtime.retrieve("What does the Generative AI Profile say about confabulation?")
    assert r.trace.stage("query").items[0]["documents"] == ["NIST.AI.600-1"]
    assert {p.doc for p in r.passages} == {"NIST.AI.600-1"}
    everything = runtime.retriever.with_config(scope_named_docs=False).retrieve(
        "What does the Generative AI Profile say about confabulation?")
    assert everything.trace.stage("query").items[0]["documents"] == []


def test_chosen_documents_limit_the_search_and_unknown_ids_are_refused(tiny_runtime):
    from click.testing import CliRunner

    from nistchat.cli import main

    question = "How is each widget reviewed before release?"
    only = tiny_runtime.retrieve(question, docs=["NIST.AI.CI-Profile-Concept-Note"])
    assert only.passages and {p.doc for p in only.passages} == {"NIST.AI.CI-Profile-Concept-Note"}
    assert only.trace.stage("query").items[0]["chosen"] == ["NIST.AI.CI-Profile-Concept-Note"]
    widget = tiny_runtime.retrieve(question, docs=["NIST.AI.999-9"])
    assert {p.doc for p in widget.passages} == {"NIST.AI.999-9"}
    with pytest.raises(ValueError, match="Known: NIST.AI.999-9, NIST.AI.CI-Profile-Concept-Note"):
        tiny_runtime.retrieve(question, docs=["NIST.AI.404"])
    assert tiny_runtime.unknown_docs([]) == "" and "NIST.AI.404" in tiny_runtime.unknown_docs(["NIST.AI.404"])
    # the command line: --doc is repeatable, an unknown one is a usage error naming the known ids
    out = CliRunner().invoke(main, ["retrieve", question, "--json", "--doc", "NIST.AI.999-9"], obj=tiny_runtime)
    assert out.exit_code == 0, out.output
    assert {p["doc"] for p in json.loads(out.output)["passages"]} == {"NIST.AI.999-9"}
    bad = CliRunner().invoke(main, ["ask", question, "--doc", "NIST.AI.404"], obj=tiny_runtime)
    assert bad.exit_code == 2 and "NIST.AI.CI-Profile-Concept-Note" in bad.output
    listed = CliRunner().invoke(main, ["retrieve", "--list-docs"], obj=tiny_runtime)
    assert "NIST.AI.999-9\tNIST AI 999-9, Guidance on Widget Assurance" in listed.output

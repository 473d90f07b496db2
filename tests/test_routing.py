"""Document routing (names -> scoped search), the question's answer shape (list, count), the
score-blend fallback and whole lists for list questions: units on hand-built data, then the
real corpus index."""
import pytest

from nistchat.engine.parent_expansion import ExpandConfig, count_tokens, expand
from nistchat.engine.query import prepare, stated_count
from nistchat.engine.score_blend import BlendConfig, blend, normalised
from nistchat.engine.shape import item_count, states_number
from nistchat.engine.retriever import RetrievalConfig
from nistchat.engine.types import Candidate, Parent


def test_question_shape():
    q = prepare("What are the six kinds of post-deployment monitoring?")
    assert q.wants_list and q.count == 6
    assert prepare("List the risks in AI 600-1.").wants_list and prepare("List the risks in AI 600-1.").count is None
    assert not prepare("Why does monitoring matter?").wants_list
    assert stated_count("What does MEASURE 2.11 say in AI 800-4?") is None  # ids and numbers are not counts
    assert stated_count("name the 12 risks") == 12
    assert stated_count("in 2024 there were 3 workshops") == 3
    for name in ("Which SOC 2 Trust Services Criteria apply?", "What does GDPR Article 22 give people?",
                 "Which item of the OWASP Top 10 for LLMs is it?"):
        assert stated_count(name) is None, name  # a number after a mid-sentence name is part of it
    assert stated_count("List 10 risks") == 10


def P(pid, text, kind="prose", doc="D"):
    return Parent(pid, doc, "T", ["S", pid], kind, text)


def test_item_count_and_stated_number():
    six = P("l", "The six categories are:\n- a\n- b\n- c\n- d\n- e\n- f", "list")
    table = P("t", "Table 1\n| A | B |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |", "table")
    assert item_count(six) == 6 and item_count(table) == 2 and item_count(P("p", "- not a list")) == 0
    assert states_number(six.text, 6) and not states_number(six.text, 5)
    assert not states_number("MEASURE 2.6 applies", 6)


def test_normalised_scales_best_to_one_and_last_to_zero():
    assert normalised([("a", 9.0), ("b", 6.0), ("c", 3.0)]) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert normalised([("a", 2.0)]) == {"a": 1.0} and normalised([]) == {}


def test_blend_keeps_a_strong_single_retriever_match_and_applies_priors():
    parents = {"both": P("both", "x"), "dense_top": P("dense_top", "x"),
               "lst": P("lst", "The three steps:\n- a\n- b\n- c", "list", doc="E")}
    cands = [Candidate("both-0", "both", 0.03), Candidate("dense_top-0", "dense_top", 0.016),
             Candidate("lst-0", "lst", 0.015), Candidate("tail-0", "tail", 0.001)]
    lists = {"dense": [("dense_top-0", 0.9), ("both-0", 0.55), ("lst-0", 0.5)],
             "bm25": [("x", 6.0), ("both-0", 4.0), ("lst-0", 3.5), ("y", 1.0)]}
    out = blend(list(cands), lists, parents, BlendConfig(top_n=3))
    assert [c.child_id for c in out][:2] == ["dense_top-0", "both-0"]  # RRF had "both" first
    assert out[-1].child_id == "tail-0" and "blend" not in out[-1].scores  # outside the window
    shaped = blend([Candidate(c.child_id, c.parent_id, 0.0) for c in cands], lists, parents,
                   BlendConfig(top_n=3), wants_list=True, count=3, docs=["E"])
    assert shaped[0].child_id == "lst-0"
    assert shaped[0].scores["blend"] == pytest.approx(0.5 * 0.0 + 0.5 * 0.5 + 0.1 + 0.5 + 0.2)


def test_list_questions_keep_lists_whole():
    lst = P("lst", "The items:\n" + "\n".join(f"- item number {i} with a few words of its own" for i in range(12)),
            "list")
    others = {f"p{i}": P(f"p{i}", " ".join(f"word{i}_{j}" for j in range(200))) for i in range(3)}
    parents = {"lst": lst, **others}
    cands = [Candidate(f"p{i}-0", f"p{i}", 1.0 - i / 10) for i in range(3)] + [Candidate("lst-0", "lst", 0.1)]
    size = count_tokens(lst.text)
    budget = 2 * size + 100
    trimmed, _, _ = expand(cands, parents, "items", ExpandConfig(k=4, budget_tokens=budget))
    whole, _, _ = expand(cands, parents, "items", ExpandConfig(k=4, budget_tokens=budget, whole_lists=True))
    assert trimmed[3].text != lst.text  # by rank weight the last passage gets a small share
    assert whole[3].text == lst.text
    assert sum(count_tokens(p.text) for p in whole) <= budget


def test_retrieval_config_rejects_unknown_fallback_settings():
    with pytest.raises(ValueError, match="fallback"):
        RetrievalConfig(fallback="magic").blend_config()
    with pytest.raises(ValueError, match="unknown retrieval.blend"):
        RetrievalConfig(blend={"nope": 1}).blend_config()


# -- the real corpus index

def test_named_document_scopes_the_search(runtime):
    r = runtime.retrieve("What does the Generative AI Profile say about confabulation?")
    assert r.trace.stage("query").items[0]["documents"] == ["NIST.AI.600-1"]
    assert {p.doc for p in r.passages} == {"NIST.AI.600-1"}
    everything = runtime.retriever.with_config(scope_named_docs=False).retrieve(
        "What does the Generative AI Profile say about confabulation?")
    assert everything.trace.stage("query").items[0]["documents"] == []


def test_blend_fallback_is_stated_in_the_trace(runtime):
    r = runtime.retriever.with_config(fallback="blend").retrieve("Which groups are underrepresented in AI standards work?")
    note = r.trace.stage("rerank").note
    if runtime.models.optional("reranker") is None:
        assert "fallback: blend of min-max normalised dense, BM25" in note
        assert r.trace.stage("rerank").items and all("score" in it for it in r.trace.stage("rerank").items)
    default = runtime.retrieve("Which groups are underrepresented in AI standards work?")
    assert runtime.models.optional("reranker") is not None or "keep fused (RRF) order" in default.trace.stage("rerank").note


def test_caption_index_follows_table_and_figure_references_within_a_document():
    from nistchat.engine.references import CaptionIndex

    parents = {"t1": P("t1", "Table 1 Monitoring categories\n| A | B |", "table", doc="D"),
               "t1b": P("t1b", "Table 1 (continued)\n| A | B |", "table", doc="D"),
               "f2": P("f2", "Figure 2: Attack taxonomy", "figure", doc="D"),
               "other": P("other", "Table 1 of another document", "table", doc="E"),
               "prose": P("prose", "Table 3 is discussed below.", "prose", doc="D")}
    captions = CaptionIndex(parents)
    assert len(captions) == 3  # prose never becomes a target, a continued caption keeps the first
    assert captions.referenced("six categories (see Table 1); Figure 2 and Table 1 again", "D") == ["t1", "f2"]
    assert captions.referenced("see Table 1", "E") == ["other"]
    assert captions.referenced("see Table 3 and Table 9", "D") == []


def test_a_passage_referring_to_a_table_brings_the_table_into_the_fusion(runtime):
    question = "What kinds of post-release oversight does the monitoring report group its work into?"
    r = runtime.retrieve(question)
    followed = [it["parent"] for it in r.trace.stage("refs").items]
    table_1 = next(p.id for p in runtime.index.parents.values()
                   if p.doc == "NIST.AI.800-4" and p.text.startswith("Table 1 "))
    assert table_1 in followed  # a well-ranked passage says "(Table 1)"; the table itself ranks low on its own
    fused = {it["parent"]: it for it in r.trace.stage("fuse").items}
    assert "refs" in fused[table_1]["ranks"]
    off = runtime.retriever.with_config(refs_window=0).retrieve(question)
    assert off.trace.stage("refs").items == []


def test_a_list_question_naming_a_count_lifts_lists_of_that_many_items(runtime):
    question = ("What are the six kinds of post-deployment monitoring that NIST's report on monitoring "
                "deployed AI systems uses to organise the field?")
    r = runtime.retrieve(question)
    table_1 = next(p for p in runtime.index.parents.values()
                   if p.doc == "NIST.AI.800-4" and p.text.startswith("Table 1 "))
    counted = [it["parent"] for it in r.trace.stage("count").items]
    assert table_1.id in counted and item_count(table_1) == 6
    assert all(item_count(runtime.index.parents[pid]) == 6 for pid in counted)
    assert table_1.id in [p.id for p in r.passages]
    off = runtime.retriever.with_config(count_window=0).retrieve(question)
    assert off.trace.stage("count").items == [] and table_1.id not in [p.id for p in off.passages]
    plain = runtime.retrieve("Why does post-deployment monitoring matter?")  # no count: no such list
    assert plain.trace.stage("count").items == []


class WordVectors:
    """A stand-in embedder with hand-set word vectors, so neighbour choice is exact and checkable."""
    name = "word-vectors"
    VECS = {"counterproductive": [1, 0, 0], "backfire": [0.9, 0.436, 0], "monitoring": [0, 1, 0],
            "monitor": [0, 0.95, 0.312], "laboratory": [0, 0, 1], "misfire": [0.8, 0.6, 0]}

    def embed(self, texts):
        import numpy as np
        return np.asarray([self.VECS.get(t, [0.577, 0.577, 0.577]) for t in texts], dtype="float32")


def test_only_rare_query_words_are_expanded_and_only_to_close_corpus_words():
    import numpy as np
    from nistchat.engine.query_expansion import ExpansionConfig, TermNeighbours

    postings = {w: (np.arange(df), np.ones(df)) for w, df in
                {"counterproductive": 2, "monitoring": 60, "monitor": 30, "laboratory": 3, "misfire": 1}.items()}
    nb = TermNeighbours(postings, 100, WordVectors(), ExpansionConfig(min_cos=0.6, top=3, weight=0.3, max_df=0.5))
    assert "misfire" not in nb.terms  # in a single child: never added
    assert nb.pending(["backfire", "monitoring", "ai"]) == ["backfire"]  # common and short words are left alone
    extra = dict(nb.expand(["backfire", "monitoring"]))
    assert set(extra) == {"counterproductive"} and extra["counterproductive"] == pytest.approx(0.3 * 0.9)
    assert nb.expand(["counterproductive"]) == []  # nothing close enough besides itself


def test_expansion_reaches_bm25_and_is_in_the_trace(runtime):
    question = "Why might an AI standard backfire if it is written too early?"
    r = runtime.retrieve(question)
    note = r.trace.stage("bm25").note
    assert "expanded with" in note and "backfire" not in note.split("expanded with")[1]
    off = runtime.retriever.with_config(expansion={"enabled": False}).retrieve(question)
    assert "expanded with" not in off.trace.stage("bm25").note
    with pytest.raises(ValueError, match="retrieval.expansion"):
        RetrievalConfig(expansion={"nope": 1}).expansion_config()

"""Query expansion: rare query words bring their nearest corpus words into BM25, at a reduced weight."""
import numpy as np
import pytest

from nistchat.config import ConfigError, QueryExpansionSettings, RetrievalSettings, updated
from nistchat.engine.query_expansion import TermNeighbours


class WordVectors:
    """A stand-in embedder with hand-set word vectors, so neighbour choice is exact and checkable."""
    name = "word-vectors"
    VECS = {"counterproductive": [1, 0, 0], "backfire": [0.9, 0.436, 0], "monitoring": [0, 1, 0],
            "monitor": [0, 0.95, 0.312], "laboratory": [0, 0, 1], "misfire": [0.8, 0.6, 0]}

    def embed(self, texts):
        return np.asarray([self.VECS.get(t, [0.577, 0.577, 0.577]) for t in texts], dtype="float32")


def test_only_rare_query_words_are_expanded_and_only_to_close_corpus_words():
    postings = {w: (np.arange(df), np.ones(df)) for w, df in
                {"counterproductive": 2, "monitoring": 60, "monitor": 30, "laboratory": 3, "misfire": 1}.items()}
    nb = TermNeighbours(postings, 100, WordVectors(), QueryExpansionSettings(min_cos=0.6, top=3, weight=0.3, max_df=0.5))
    assert "misfire" not in nb.terms  # in a single child: never added
    assert nb.pending(["backfire", "monitoring", "ai"]) == ["backfire"]  # common and short words are left alone
    extra = dict(nb.expand(["backfire", "monitoring"]))
    assert set(extra) == {"counterproductive"} and extra["counterproductive"] == pytest.approx(0.3 * 0.9)
    assert nb.expand(["counterproductive"]) == []  # nothing close enough besides itself


def test_expansion_reaches_bm25_and_is_in_the_trace(runtime):
    question = "Why might an AI standard backfire if it is written too early?"
    r = runtime.retriever.with_config(expansion={"enabled": True}).retrieve(question)  # off by default
    note = r.trace.stage("bm25").note
    assert "expanded with" in note and "backfire" not in note.split("expanded with")[1]
    off = runtime.retrieve(question)
    assert "expanded with" not in off.trace.stage("bm25").note
    with pytest.raises(ConfigError, match="retrieval.expansion"):
        updated(RetrievalSettings(), {"expansion": {"nope": 1}}, "retrieval")

"""Query expansion for BM25: a question word the corpus rarely or never uses brings in the corpus
words nearest to it in the embedder's space ("backfire" -> "counterproductive", "chatbot" ->
"chatbots", "lab" -> "laboratory").

Why: BM25 only matches words the corpus uses, and users paraphrase ("post-release", "lab testing",
"underrepresented"). The embedder already knows which corpus words mean nearly the same; asking it
once per rare query word costs a few milliseconds. Words the corpus uses often are left alone:
they already match, and expanding them ("monitoring" -> "monitor", "report" -> "reporting") only
pulls in passages that share the topic's vocabulary rather than the question's point.
Expansion terms are added with a reduced weight (their cosine times `weight`).
"""
from __future__ import annotations

import numpy as np

from ..config import QueryExpansionSettings


class TermNeighbours:
    """The corpus vocabulary (BM25 terms, alphabetic, 4+ letters) embedded once; nearest terms on demand."""

    def __init__(self, postings: dict, n_docs: int, embedder, cfg: QueryExpansionSettings):
        self.cfg = cfg
        self.df = {t: len(p[0]) for t, p in postings.items()}
        self.n_docs = max(1, n_docs)
        self.terms = [t for t, df in self.df.items() if t.isalpha() and len(t) >= 4 and df >= cfg.min_term_df]
        self.embedder = embedder
        self.vectors = np.asarray(embedder.embed(self.terms), dtype="float32") if self.terms else None
        self._cache: dict[str, list[tuple[str, float]]] = {}

    def wants_expansion(self, token: str) -> bool:
        return token.isalpha() and len(token) >= 4 and self.df.get(token, 0) / self.n_docs <= self.cfg.max_df

    def pending(self, tokens: list[str]) -> list[str]:
        """Rare words of `tokens` whose neighbours are not known yet: embed them with the query, in one
        call (a second embedder call per query costs more than the extra batch rows)."""
        return [t for t in dict.fromkeys(tokens) if self.wants_expansion(t) and t not in self._cache]

    def learn(self, words: list[str], vectors) -> None:
        """Remember the nearest corpus terms of `words`, given their (normalised) embeddings."""
        if not words or self.vectors is None:
            for w in words:
                self._cache[w] = []
            return
        sims = self.vectors @ np.asarray(vectors, dtype="float32").reshape(len(words), -1).T
        for j, word in enumerate(words):
            order = np.argsort(-sims[:, j])[: self.cfg.top + 1]
            self._cache[word] = [(self.terms[i], float(sims[i, j])) for i in order
                                 if self.terms[i] != word and sims[i, j] >= self.cfg.min_cos][: self.cfg.top]

    def expand(self, tokens: list[str]) -> list[tuple[str, float]]:
        """(corpus term, weight) pairs for the rare words among `tokens`; never a word already asked."""
        asked = set(tokens)
        rare = [t for t in dict.fromkeys(tokens) if self.wants_expansion(t)]
        todo = self.pending(tokens)
        if todo:
            self.learn(todo, self.embedder.embed(todo))
        out: dict[str, float] = {}
        for tok in rare:
            for term, cos in self._cache.get(tok, []):
                if term not in asked:
                    out[term] = max(out.get(term, 0.0), self.cfg.weight * cos)
        return list(out.items())

"""Sparse search: BM25 over the children's words, with identifiers kept whole.

`bm25_tokenize` is THE tokenizer for both sides (indexing and queries), so identifiers match
exactly; `FastBM25` gives rank_bm25's scores from an inverted index.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..types import Ranked
from ..vocabulary import BM25_STOPWORDS, FUNCTION_ID_TOKEN

_TOKEN = re.compile(r"[a-z0-9]+(?:[._\-/][a-z0-9]+)*", re.I)


def bm25_tokenize(text: str) -> list[str]:
    """Lowercase word tokens; identifiers kept whole, plus their parts.

    "GOVERN 1.2" -> "govern", "1.2", "govern_1.2"; "PW.1.1" -> "pw.1.1", "pw", "1.1";
    "DP-SGD" -> "dp-sgd", "dp", "sgd", "dpsgd". Stopwords dropped; single letters dropped.
    Hyphenated words also yield their joined form, because PDF-to-text conversion joins words
    broken across lines ("postdeployment", "thirdparty") while users type the hyphen.
    """
    tokens: list[str] = []
    for m in FUNCTION_ID_TOKEN.finditer(text):
        tokens.append(f"{m.group(1).lower()}_{m.group(2)}")
    for m in _TOKEN.finditer(text):
        tok = m.group(0).lower().strip("._-/")
        if not tok:
            continue
        if re.search(r"[._\-/]", tok):
            tokens.append(tok)
            parts = [p for p in re.split(r"[._\-/]", tok) if p]
            # keep the numeric tail joined ("pw.1.1" -> "1.1") so "1.1" queries match
            num = re.search(r"(\d+(?:\.\d+)+)$", tok)
            if num and num.group(1) != tok:
                tokens.append(num.group(1))
            tokens.extend(p for p in parts if len(p) > 1 and p not in BM25_STOPWORDS and not p.isdigit())
            if "-" in tok and re.fullmatch(r"[a-z]+(?:-[a-z]+)+", tok):
                tokens.append(tok.replace("-", ""))  # "post-deployment" also as "postdeployment"
            continue
        if tok in BM25_STOPWORDS or (len(tok) == 1 and not tok.isdigit()):
            continue
        tokens.append(tok)
    return tokens


class FastBM25:
    """BM25Okapi scores from rank_bm25's own statistics, via an inverted index.

    rank_bm25's get_scores walks every document in Python for every query token (tens of ms on
    this corpus); postings with precomputed per-document term weights give identical scores with
    one numpy scatter-add per query token.
    """

    def __init__(self, bm25):
        self.n = len(bm25.doc_freqs)
        k1, b, avgdl = bm25.k1, bm25.b, bm25.avgdl
        rows: dict[str, list[int]] = {}
        tfs: dict[str, list[float]] = {}
        norms = [k1 * (1 - b + b * dl / avgdl) for dl in bm25.doc_len]
        for i, freqs in enumerate(bm25.doc_freqs):
            for term, tf in freqs.items():
                rows.setdefault(term, []).append(i)
                tfs.setdefault(term, []).append(tf * (k1 + 1) / (tf + norms[i]))
        self.postings = {t: (np.asarray(rows[t], dtype=np.int64),
                             np.asarray(tfs[t], dtype=np.float64) * (bm25.idf.get(t) or 0.0)) for t in rows}

    def scores(self, tokens: list[str]) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float64)
        for tok in tokens:  # repeated tokens count again, as in BM25Okapi
            post = self.postings.get(tok)
            if post is not None:
                np.add.at(out, post[0], post[1])
        return out


def _top(scores: np.ndarray, depth: int) -> list[int]:
    depth = min(depth, len(scores))
    if depth <= 0:
        return []
    idx = np.argpartition(-scores, depth - 1)[:depth]
    return [int(i) for i in idx[np.lexsort((idx, -scores[idx]))] if scores[i] > 0]


@dataclass
class SparseHits:
    """One BM25 search: the top children, and every child's score by children row (the exact
    list breaks its ties with them)."""
    ranked: Ranked
    by_row: dict[int, float]


class SparseSearch:
    """`search(tokens, depth)` -> SparseHits; BM25 positions skip short children (`rows` maps them)."""

    def __init__(self, bm25, rows: list[int], ids: list[str]):
        self.fast = FastBM25(bm25) if bm25 is not None else None
        self.rows, self.ids = rows, ids

    def search(self, tokens: list[str], depth: int) -> SparseHits:
        if self.fast is None or not tokens:
            return SparseHits([], {})
        scores = self.fast.scores(tokens)
        ranked = [(self.ids[self.rows[i]], float(scores[i])) for i in _top(scores, depth)]
        return SparseHits(ranked, {self.rows[int(i)]: float(scores[i]) for i in np.nonzero(scores)[0]})

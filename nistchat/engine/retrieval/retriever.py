"""The retriever: query -> dense + BM25 -> RRF -> rerank -> caps + parent expansion -> Passages.

Each stage is a small module (query, fusion, rerank, expand); this one runs them in order, times
them, and records every stage's candidates and scores in the Trace so `nistchat diagnose` can
replay a retrieval. Depths, weights, caps and the rerank window are settings (`[retrieval]` in
instance/config.toml, `config.RetrievalSettings`), never per-question rules.
"""
from __future__ import annotations

import re
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from ...config import RetrievalSettings, Settings, updated
from . import fusion
from ..corpus.catalog import Catalog
from .expand import ExpandConfig, expand
from .followup import resolve
from .query import Query, prepare
from .rerank import rerank
from ..text import count_tokens, identifier_regex
from ..types import Candidate, Passage, Resolution, Retrieval, Trace

MODES = ("hybrid", "dense", "bm25")
SCOPE_OVERFETCH = 4  # a question naming documents: fetch this many times deeper, then keep theirs
TIMING_KEYS = ("embed", "dense", "bm25", "fuse", "rerank", "expand", "total")  # the CLI contract (DESIGN.md);
# the optional stages (dense2, rewrite) carry their time in the trace, and "total" includes it


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


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _second_pool() -> ThreadPoolExecutor:
    """Threads for the second embedder's searches, one process-wide pool (started on first use)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="dense2")
        return _POOL


def unknown_docs_message(docs, known: list[str]) -> str:
    """What to say when a document choice names ids the index does not have."""
    unknown = [d for d in docs if d not in known]
    return f"Unknown document(s): {', '.join(map(str, unknown))}. Known: {', '.join(known)}."


class Retriever:
    """One per process (Runtime holds it); stateless per call, so safe to share across threads."""

    def __init__(self, index, models, settings: Settings, config: RetrievalSettings | None = None,
                 rewriter=None):
        """`rewriter(question, settings) -> query_rewrite.Rewrite` writes the passage searched when
        first-pass retrieval is weak and `[retrieval.rewrite] enabled` (None: never rewrite)."""
        from ..index.index import bm25_tokenize

        self.rewriter = rewriter
        self.index = index
        self.models = models
        self.settings = settings
        self.config = config or settings.retrieval
        self.second = self._second_for(self.config.second_embedder)
        self.tokenize = bm25_tokenize
        self.children = index.children
        self.parent_of = {c.id: c.parent_id for c in self.children}
        self.child_text = {c.id: c.text for c in self.children}
        self.bm25_rows = list(getattr(index, "bm25_rows", None) or range(len(self.children)))
        self.fast_bm25 = FastBM25(index.bm25) if getattr(index, "bm25", None) is not None else None
        self._warm = False
        self._lower = [c.text.lower() for c in self.children]
        self._patterns: dict = {}
        self.doc_of = {c.id: index.parents[c.parent_id].doc for c in self.children if c.parent_id in index.parents}
        self.catalog = Catalog.from_index(index, self.config.doc_aliases)

    # -- the two retrievers
    def _dense(self, vector: np.ndarray, depth: int) -> list[tuple[str, float]]:
        depth = min(depth, self.index.dense.ntotal)
        if depth <= 0:
            return []
        scores, rows = self.index.dense.search(np.asarray(vector, dtype="float32").reshape(1, -1), depth)
        return [(self.children[int(r)].id, float(s)) for s, r in zip(scores[0], rows[0]) if r >= 0]

    def _bm25(self, tokens: list[str], depth: int) -> tuple[list[tuple[str, float]], np.ndarray | None]:
        """Top `depth` children by BM25, and the full score array (the exact list breaks ties with it)."""
        if self.fast_bm25 is None or not tokens:
            return [], None
        scores = self.fast_bm25.scores(tokens)
        return [(self.children[self.bm25_rows[i]].id, float(scores[i])) for i in _top(scores, depth)], scores

    def _exact(self, identifiers: list[str], depth: int, bm25_scores: np.ndarray | None = None,
               definition: bool = False) -> list[tuple[str, float]]:
        """Children that contain a query identifier verbatim (GOVERN 1.2, PW.1.1, MP-5.1-005), or that
        define a query acronym ("... (TEVV)"); ranked by how many of them they hold.

        Why: both retrievers blur identifiers (dense sees "GOVERN 1.2" near "GOVERN 1.3"; BM25 ranks
        the many children mentioning GOVERN), yet a verbatim id is the most precise signal a
        question can carry. Acronyms count only in their defining form, and only when rare enough
        in the corpus (acronym_max_df) to mean something, unless the question asks what an acronym
        stands for (`definition`): then the defining occurrence is the answer even for an acronym
        as common as "GAI" (all over AI 600-1, defined in a few places); only near-universal ones
        ("AI") stay out (definition_max_df). Ties (every row of a table whose caption
        holds the id) are broken by the child's BM25 score for the whole question, not by position
        in the corpus, so the row that also matches the question's words leads.
        """
        patterns = [p for p in (self._pattern(i, definition) for i in identifiers) if p is not None]
        if not patterns:
            return []
        counts = []
        for i, text in enumerate(self._lower):
            n = sum(1 for parts, rx in patterns if all(x in text for x in parts) and rx.search(text))
            if n:
                counts.append((n, i))
        tie = self._bm25_by_row(bm25_scores)
        ranked = sorted(counts, key=lambda c: (-c[0], -tie.get(c[1], 0.0), c[1]))[:depth]
        return [(self.children[i].id, float(n)) for n, i in ranked]

    def _scoped(self, ranked: list[tuple[str, float]], docs: list[str], depth: int) -> list[tuple[str, float]]:
        """Keep the children of the documents the question names (all when it names none)."""
        if docs:
            ranked = [(cid, s) for cid, s in ranked if self.doc_of.get(cid) in docs]
        return ranked[:depth]

    def _bm25_by_row(self, scores: np.ndarray | None) -> dict[int, float]:
        """BM25 scores keyed by children row (BM25 positions skip short children)."""
        if scores is None:
            return {}
        nz = np.nonzero(scores)[0]
        return {self.bm25_rows[int(i)]: float(scores[i]) for i in nz}

    def _pattern(self, ident: str, definition: bool = False):
        """(substrings for a cheap prefilter, compiled regex) for one identifier; None if uninformative.
        Cached: the acronym document-frequency check scans the corpus once per acronym."""
        if (ident, definition) in self._patterns:
            return self._patterns[(ident, definition)]
        low = ident.lower()
        parts = low.split()
        if any(ch.isdigit() for ch in ident):
            result = (parts, identifier_regex(ident))
        else:
            body = re.escape(low).replace(r"\ ", r"\s+")
            word = re.compile(rf"(?<![\w-]){body}(?![\w-])")
            df = sum(1 for t in self._lower if low in t and word.search(t)) / max(1, len(self._lower))
            limit = self.config.definition_max_df if definition else self.config.acronym_max_df
            result = None if df > limit else (
                parts, re.compile(rf"\({body}s?\)|(?<![\w-]){body}s?\s*(?::|=|stands for|means)"))
        self._patterns[(ident, definition)] = result
        return result

    def _items(self, ranked: list[tuple[str, float]]) -> list[dict]:
        return [{"rank": r, "child": cid, "parent": self.parent_of.get(cid, ""), "score": round(s, 6),
                 "text": self.child_text.get(cid, "")[:200]}
                for r, (cid, s) in enumerate(ranked[: self.config.trace_depth], start=1)]

    def _cand_items(self, cands: list[Candidate], cut: int | None = None) -> list[dict]:
        return [{"rank": r, "child": c.child_id, "parent": c.parent_id, "score": round(c.score, 6),
                 "ranks": dict(c.ranks), "scores": {k: round(v, 6) for k, v in c.scores.items()},
                 "in_window": cut is None or r <= cut, "text": self.child_text.get(c.child_id, "")[:200]}
                for r, c in enumerate(cands[: self.config.trace_depth], start=1)]

    # -- the pipeline
    def retrieve(self, question: str, *, k: int = 6, history: list[dict] | None = None,
                 mode: str = "hybrid", docs: list[str] | None = None) -> Retrieval:
        """`docs`: the documents a person chose to search (ids from `catalog.documents`); empty or
        None means all, and then documents the question names scope it instead."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if k < 1:
            raise ValueError("k must be at least 1")
        cfg, trace = self.config, Trace()
        timings = dict.fromkeys(TIMING_KEYS, 0.0)
        if mode in ("hybrid", "dense"):  # a first call loads the model: keep that out of the timings
            t = time.perf_counter()
            embedder = self.models.get("embedder")
            if not self._warm:  # torch's first forward pass is ~0.5 s of one-off set-up
                embedder.embed(["warm-up"])
                self._warm = True
                trace.notes.append(f"embedder loaded and warmed in {(time.perf_counter() - t) * 1000:.0f} ms "
                                   f"(not counted in timings)")
        start = time.perf_counter()

        chosen = [d for d in self.catalog.patterns if d in set(docs or ())]
        if docs and len(chosen) < len(set(docs)):
            raise ValueError(unknown_docs_message(docs, list(self.catalog.patterns)))
        followup = resolve(question, history, self.catalog, self.index.parents)
        if followup.reuse:
            return self._reused(question, followup, trace, start)
        if followup.compare and not chosen and cfg.scope_named_docs:
            return self._compared(question, followup, k, mode, start)
        query: Query = prepare(question, search_text=followup.question, note=followup.why)
        named = chosen or (list(followup.scope) if cfg.scope_named_docs else [])
        over = SCOPE_OVERFETCH if named else 1  # scoping filters the lists: fetch deeper first
        trace.add("query", 0.0, [{**query.to_dict(), **followup.to_dict(), "documents": named, "chosen": chosen}],
                  query.note)
        if chosen:
            trace.notes.append(f"limited to the chosen documents: {', '.join(chosen)}")
        if query.rewritten:
            trace.notes.append(query.note)
        tokens = self.tokenize(query.search_text)
        # With the second embedder in use, the other lists reach deeper: their votes then decide among
        # its candidates; alone, deeper lists only add noise (docs/decisions.md, "List depth").
        second = mode == "hybrid" and self.second is not None and self.second.available()
        dense_depth, bm25_depth = (cfg.depth_with_second,) * 2 if second else (cfg.dense_depth, cfg.bm25_depth)
        # The second embedder's question vector is most of retrieval's time: its search starts now,
        # on a thread of its own, while MiniLM, BM25 and the identifiers run (torch and numpy let go
        # of the GIL), and is collected before fusion (docs/decisions.md, "Retrieval latency").
        pending = _second_pool().submit(self._timed_second_search, query.search_text,
                                        cfg.depth_with_second * over) if second else None

        dense: list[tuple[str, float]] = []
        if mode in ("hybrid", "dense"):
            t = time.perf_counter()
            vector = embedder.embed_query([query.search_text])
            timings["embed"] = (time.perf_counter() - t) * 1000
            trace.add("embed", timings["embed"], note=getattr(embedder, "name", ""))
            t = time.perf_counter()
            dense = self._scoped(self._dense(vector[0], dense_depth * over), named, dense_depth)
            timings["dense"] = (time.perf_counter() - t) * 1000
            trace.add("dense", timings["dense"], self._items(dense), f"FAISS inner product, depth {dense_depth}")

        sparse: list[tuple[str, float]] = []
        bm25_scores = None
        if mode in ("hybrid", "bm25"):
            t = time.perf_counter()
            sparse, bm25_scores = self._bm25(tokens, bm25_depth * over)
            sparse = self._scoped(sparse, named, bm25_depth)
            timings["bm25"] = (time.perf_counter() - t) * 1000
            trace.add("bm25", timings["bm25"], self._items(sparse),
                      f"BM25 tokens {tokens}, depth {bm25_depth}")

        rewritten = self._rewrite(query.search_text, dense, named, over, trace) if mode == "hybrid" else {}
        if mode == "hybrid":
            rewritten.update(self._second_dense(pending, named, trace))

        t = time.perf_counter()
        if mode == "hybrid":
            exact = self._exact(query.identifiers, cfg.exact_depth, bm25_scores, query.asks_definition)
            trace.add("exact", 0.0, self._items(exact), f"verbatim identifiers / acronym definitions for "
                                                        f"{query.identifiers or 'none'}")
            lists = {"dense": dense, "bm25": sparse, "exact": exact, **rewritten}
            fused = fusion.rrf(lists, k=cfg.rrf_k, weights=cfg.weights, parent_of=self.parent_of)
            fuse_note = f"RRF k={cfg.rrf_k} weights={cfg.weights}; rerank window = top {cfg.rerank_top_n}"
        else:
            fused = fusion.single(mode, dense or sparse, self.parent_of)
            fuse_note = f"{mode} only: no fusion"
        if cfg.parent_decay > 0:
            fused = fusion.by_parent(fused, decay=cfg.parent_decay, k=cfg.rrf_k)
            fuse_note += f"; grouped by parent (decay {cfg.parent_decay})"
        timings["fuse"] = (time.perf_counter() - t) * 1000
        trace.add("fuse", timings["fuse"], self._cand_items(fused, cfg.rerank_top_n), fuse_note)

        t = time.perf_counter()
        reranker = self.models.optional("reranker")
        result = rerank(query.text, fused, reranker, top_n=cfg.rerank_top_n,
                        text_of=lambda c: self.child_text.get(c.child_id, ""),
                        missing_reason="" if reranker else self.models.reason_missing("reranker"))
        timings["rerank"] = (time.perf_counter() - t) * 1000
        trace.add("rerank", timings["rerank"],
                  [{"child": cid, "parent": self.parent_of.get(cid, ""), "score": round(s, 6)}
                   for cid, s in result.scored], result.note)
        if not result.applied:
            trace.notes.append(result.note)

        t = time.perf_counter()
        ecfg = ExpandConfig(k=k, budget_tokens=self.settings.answer.context_tokens, max_per_section=cfg.max_per_section,
                            max_per_figure=cfg.max_per_figure, join_split_prose=cfg.join_split_prose,
                            weighted_budget=cfg.weighted_budget)
        passages, slots, decisions = expand(result.candidates, self.index.parents, query.text, ecfg, self.child_text)
        timings["expand"] = (time.perf_counter() - t) * 1000
        tokens = sum(count_tokens(p.text) for p in passages)
        trace.add("caps", 0.0, decisions, f"max {cfg.max_per_section} parents per section, "
                                          f"{cfg.max_per_figure} per figure; capped ones backfill if room")
        trace.add("expand", timings["expand"],
                  [{"rank": i, "parent": s.parent.id, "kind": s.parent.kind, "section": s.parent.section,
                    "hits": s.hits, "pieces": [p.parent.id for p in s.pieces],
                    "neighbours": list(s.parent.neighbours), "prev": s.parent.prev_id, "next": s.parent.next_id,
                    "tokens": count_tokens(s.text), "trimmed": s.trimmed}
                   for i, s in enumerate(slots, start=1)],
                  f"{len(passages)} passages, {tokens} tokens of {ecfg.budget_tokens} budget")
        timings["total"] = (time.perf_counter() - start) * 1000
        timings = {key: round(v, 2) for key, v in timings.items()}
        return Retrieval(question=question, passages=passages, trace=trace, timings_ms=timings,
                         list_count=query.list_count, followup=followup)

    def _reused(self, question: str, followup: Resolution, trace: Trace, start: float) -> Retrieval:
        """A turn acting on the previous answer ("briefer", "in a table"): that answer's passages
        again, no new search, so the reader restates what was found and the checks use the same."""
        query = prepare(question, search_text=followup.question, note=followup.why)
        trace.add("query", 0.0, [{**query.to_dict(), **followup.to_dict(), "documents": list(followup.scope),
                                  "chosen": []}], followup.why)
        trace.notes.append(followup.why)
        passages = [Passage(**{**p.to_dict(), "rank": i}) for i, p in enumerate(followup.reuse, 1)]
        timings = dict.fromkeys(TIMING_KEYS, 0.0)
        timings["total"] = round((time.perf_counter() - start) * 1000, 2)
        return Retrieval(question=question, passages=passages, trace=trace, timings_ms=timings,
                         list_count=query.list_count, followup=followup)

    def _compared(self, question: str, followup: Resolution, k: int, mode: str, start: float) -> Retrieval:
        """A comparison across documents ("is the GAI Profile's the same?"): the resolved
        question retrieved from each document on its own, the passages taken in turns (best of each
        first) within k and the context budget, so each document's answer reaches the reader."""
        parts = [self.retrieve(followup.question, k=k, mode=mode, docs=[doc]) for doc in followup.scope]
        budget, used, seen = self.settings.answer.context_tokens, 0, set()
        passages: list[Passage] = []
        for rank in range(k):
            for part in parts:
                if rank < len(part.passages) and len(passages) < k and part.passages[rank].id not in seen:
                    p = part.passages[rank]
                    cost = count_tokens(p.text)
                    if passages and used + cost > budget:
                        continue
                    seen.add(p.id)
                    used += cost
                    passages.append(Passage(**{**p.to_dict(), "rank": len(passages) + 1}))
        query = prepare(question, search_text=followup.question, note=followup.why)
        trace = Trace()
        trace.add("query", 0.0, [{**query.to_dict(), **followup.to_dict(), "documents": list(followup.scope),
                                  "chosen": []}], followup.why)
        trace.notes.append(f"{followup.why}: {', '.join(followup.scope)}")
        for doc, part in zip(followup.scope, parts):  # each document's stages, its name on them
            for stage in part.trace.stages:
                if stage.name != "query":
                    trace.stages.append(type(stage)(stage.name if doc == followup.scope[0] else f"{stage.name}@{doc}",
                                                    stage.ms, stage.items, stage.note))
        timings = {key: round(sum(p.timings_ms.get(key, 0.0) for p in parts), 2) for key in TIMING_KEYS}
        timings["total"] = round((time.perf_counter() - start) * 1000, 2)
        return Retrieval(question=question, passages=passages, trace=trace, timings_ms=timings,
                         list_count=query.list_count, followup=followup)

    def _timed_second_search(self, search_text: str, depth: int) -> tuple[list[tuple[int, float]], float]:
        t = time.perf_counter()
        found = self.second.search(search_text, depth)
        return found, (time.perf_counter() - t) * 1000

    def _second_dense(self, pending: Future | None, named: list[str],
                      trace: Trace) -> dict[str, list[tuple[str, float]]]:
        """The second embedder's ranked list ("dense2") from the search started in `retrieve`, once
        its vectors are built; {} until then (`pending` is None)."""
        if self.second is None:
            return {}
        if pending is None:
            trace.add("dense2", 0.0, [], f"second embedder {self.second.name} not in use: {self.second.reason}")
            return {}
        t = time.perf_counter()
        try:
            found, search_ms = pending.result()
        except Exception as exc:  # a broken model file costs this list, never the answer
            self.second.disable(f"it failed: {type(exc).__name__}: {exc}")
            trace.add("dense2", (time.perf_counter() - t) * 1000, [], f"second embedder {self.second.name} "
                                                                     f"not in use: {self.second.reason}")
            return {}
        waited = (time.perf_counter() - t) * 1000
        depth = self.config.depth_with_second
        ranked = self._scoped([(self.children[row].id, score) for row, score in found], named, depth)
        trace.add("dense2", search_ms, self._items(ranked), f"{self.second.name}, searched beside the other lists "
                                                             f"(waited {waited:.0f} ms for it), depth {depth}")
        return {"dense2": ranked}

    def _rewrite(self, search_text: str, dense: list[tuple[str, float]], named: list[str], over: int,
                 trace: Trace) -> dict[str, list[tuple[str, float]]]:
        """The rewrite's ranked lists ("rewrite_dense", "rewrite_bm25") when retrieval is weak and
        rewriting is on; {} otherwise. The refusal gate still reads the question's own dense list."""
        cfg = self.config.rewrite
        if not (cfg.enabled and self.rewriter is not None):
            return {}
        top = dense[0][1] if dense else 0.0
        if top >= cfg.below:
            trace.add("rewrite", 0.0, [], f"not needed: top dense score {top:.3f} >= {cfg.below}")
            return {}
        t = time.perf_counter()
        rewrite = self.rewriter(search_text, cfg)
        lists: dict[str, list[tuple[str, float]]] = {}
        if rewrite.text:
            depth = self.config.dense_depth
            vector = self.models.get("embedder").embed([rewrite.text])  # document side: it reads like one
            lists["rewrite_dense"] = self._scoped(self._dense(vector[0], depth * over), named, depth)
            if cfg.bm25:
                ranked, _ = self._bm25(self.tokenize(rewrite.text), self.config.bm25_depth * over)
                lists["rewrite_bm25"] = self._scoped(ranked, named, self.config.bm25_depth)
        trace.add("rewrite", (time.perf_counter() - t) * 1000, [rewrite.to_dict()] + self._items(lists.get("rewrite_dense", [])),
                  f"top dense score {top:.3f} < {cfg.below}: the reader's passage ({rewrite.status}, "
                  f"{rewrite.ms:.0f} ms) searched too" + (f"; {rewrite.note}" if rewrite.note else ""))
        return lists

    def with_config(self, **changes) -> "Retriever":
        """A retriever sharing this one's index and models with some settings changed (for tuning)."""
        clone = object.__new__(Retriever)
        clone.__dict__.update(self.__dict__)
        clone.config = updated(self.config, changes, "retrieval")
        if "second_embedder" in changes:
            clone.second = clone._second_for(clone.config.second_embedder)
        return clone

    def _second_for(self, name: str):
        """The second embedder's list for this index (second_dense.SecondDense); None when off."""
        from ..index.second import SecondDense

        return SecondDense(self.index, self.settings.index_dir, self.settings.models_dir, name) if name else None

"""The retriever: query -> dense + BM25 + exact (+ second embedder, rewrite) -> RRF -> rerank ->
caps + parent expansion -> Passages.

Each stage is a module of its own (query, the index's dense and sparse searches, exact, fusion,
rerank, expand); this one wires them in order and records every stage's candidates, scores and
time in the Trace so `nistchat diagnose` can replay a retrieval. Depths, weights, caps and the
rerank window are settings (`[retrieval]` in instance/config.toml, `config.RetrievalSettings`),
never per-question rules.
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from ...config import RetrievalSettings, Settings, updated
from ..backends.base import Embedder, Reranker
from ..corpus.catalog import Catalog
from ..index import Index, SecondDense
from ..index.sparse import bm25_tokenize
from ..text import count_tokens
from ..types import Candidate, Passage, Ranked, Resolution, Retrieval, Trace
from . import fusion
from .exact import ExactSearch
from .expand import ExpandConfig, expand
from .focus import focused, heading
from .followup import resolve
from .query import Query, prepare
from .rerank import rerank
from .rewrite import Rewriter
from .translate import Translator

MODES = ("hybrid", "dense", "bm25")
SCOPE_OVERFETCH = 4  # a question naming documents: fetch this many times deeper, then keep theirs
TIMING_KEYS = ("embed", "dense", "bm25", "fuse", "rerank", "expand", "total")  # the CLI contract (docs/api.md);
# the optional stages (dense2, rewrite) carry their time in the trace, and "total" includes it

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
    """One per process (Runtime holds it); stateless per call, so safe to share across threads.

    Handed what it needs: the index, getters for the embedder and the reranker (models load on
    first use; the reranker getter returns None, with `reranker_missing()` saying why, when none
    can be served), the rewriter (None: never rewrite), the translator of questions in other
    languages (None: searched as written) and the second embedder's list (None: off)."""

    def __init__(self, index: Index, settings: Settings, *, embedder: Callable[[], Embedder],
                 reranker: Callable[[], Reranker | None] = lambda: None,
                 reranker_missing: Callable[[], str] = lambda: "no reranker configured",
                 rewriter: Rewriter | None = None, second: Callable[[str], SecondDense | None] = lambda _name: None,
                 config: RetrievalSettings | None = None, translator: Translator | None = None):
        self.index, self.settings = index, settings
        self.embedder, self.reranker, self.reranker_missing = embedder, reranker, reranker_missing
        self.rewriter, self._second_for, self.translator = rewriter, second, translator
        self.config = config or settings.retrieval
        self.second = second(self.config.second_embedder) if self.config.second_embedder else None
        self.tokenize = bm25_tokenize
        self.children = index.children
        self.parent_of = {c.id: c.parent_id for c in self.children}
        self.child_text = {c.id: c.text for c in self.children}
        self.doc_of = {c.id: index.parents[c.parent_id].doc for c in self.children if c.parent_id in index.parents}
        self.exact = ExactSearch(self.children, self.config)
        self.catalog = Catalog.from_index(index, self.config.doc_aliases)
        self._warm = False

    def retrieve(self, question: str, *, k: int = 6, history: list[dict] | None = None,
                 mode: str = "hybrid", docs: list[str] | None = None) -> Retrieval:
        """`docs`: the documents a person chose to search (ids from `catalog.documents`); empty or
        None means all, and then documents the question names scope it instead."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if k < 1:
            raise ValueError("k must be at least 1")
        trace = Trace()
        embedder = self._warm_embedder(trace) if mode in ("hybrid", "dense") else None
        start = time.perf_counter()
        chosen = self._chosen(docs)
        asked, history, english = self._in_english(question, history, trace)
        followup = self.resolve(asked, history)
        if followup.reuse:
            return replace(self._reused(asked, followup, trace, start), question=question, english=english)
        if followup.compare and not chosen and self.config.scope_named_docs:
            return replace(self._compared(asked, followup, k, mode, start, trace), question=question, english=english)
        query, named = self._shape(asked, followup, chosen, trace)
        lists = self._search(query, named, mode, embedder, trace)
        fused = self._fuse(lists, mode, trace)
        candidates = self._rerank(query, fused, trace)
        passages = self._focus(self._expand(query, candidates, k, trace), followup, trace)
        timings = {key: trace.ms(key) for key in TIMING_KEYS if key != "total"}
        timings["total"] = round((time.perf_counter() - start) * 1000, 2)
        return Retrieval(question=question, passages=passages, trace=trace, timings_ms=timings,
                         list_count=query.list_count, followup=followup, english=english)

    def resolve(self, question: str, history: list[dict] | None) -> Resolution:
        """How a turn is understood against the conversation (followup.resolve), with this index's
        document names and stored passages: retrieval searches for it, and the small-talk step asks
        whether the turn leans on an answer before taking it for a question about the assistant."""
        return resolve(question, history, self.catalog, self.index.parents)

    # -- the steps, in order
    def _warm_embedder(self, trace: Trace) -> Embedder:
        """The embedder, loaded and warmed on the first call (kept out of the timings)."""
        t = time.perf_counter()
        embedder = self.embedder()
        if not self._warm:  # torch's first forward pass is ~0.5 s of one-off set-up
            embedder.embed(["warm-up"])
            self._warm = True
            trace.notes.append(f"embedder loaded and warmed in {(time.perf_counter() - t) * 1000:.0f} ms "
                               f"(not counted in timings)")
        return embedder

    def _in_english(self, question: str, history: list[dict] | None,
                    trace: Trace) -> tuple[str, list[dict] | None, str]:
        """The question and the history's questions, each typed in another language translated
        (retrieval/translate.py), and the question's translation ('' when it was not translated)."""
        if self.translator is None:
            return question, history, ""
        cfg = self.config.translate
        t = time.perf_counter()
        own = self.translator(question, cfg)
        earlier, moved = [], []
        for msg in history or []:
            tr = self.translator(str(msg.get("content") or ""), cfg) if msg.get("role") == "user" else None
            if tr is not None and tr.text:
                moved.append(tr)
                msg = {**msg, "content": tr.text}
            earlier.append(msg)
        if not own.language and not moved:
            return question, history, ""
        if own.text:
            path = f"typed in {own.language}: searched as its English translation {own.text!r} ({own.status})"
        elif own.language:
            path = f"typed in {own.language}: searched as written ({own.status}{': ' + own.note if own.note else ''})"
        else:
            path = "searched in English"
        if moved:
            path += f"; {len(moved)} earlier question(s) of the conversation in English"
        trace.add("translate", (time.perf_counter() - t) * 1000, [own.to_dict()] + [m.to_dict() for m in moved], path)
        trace.notes.append(path)
        return own.text or question, earlier if history is not None else None, own.text

    def _chosen(self, docs: list[str] | None) -> list[str]:
        """The documents a person chose, in index order; ValueError naming the known ones for any other."""
        chosen = [d for d in self.catalog.patterns if d in set(docs or ())]
        if docs and len(chosen) < len(set(docs)):
            raise ValueError(unknown_docs_message(docs, list(self.catalog.patterns)))
        return chosen

    def _shape(self, question: str, followup: Resolution, chosen: list[str], trace: Trace) -> tuple[Query, list[str]]:
        """The query searched (a follow-up as resolved against the conversation, retrieval/followup.py)
        and the documents it is scoped to (chosen, else named or carried over)."""
        query: Query = prepare(question, search_text=followup.question, note=followup.why)
        named = chosen or (list(followup.scope) if self.config.scope_named_docs else [])
        trace.add("query", 0.0, [{**query.to_dict(), **followup.to_dict(), "documents": named, "chosen": chosen}],
                  query.note)
        if chosen:
            trace.notes.append(f"limited to the chosen documents: {', '.join(chosen)}")
        if query.rewritten:
            trace.notes.append(query.note)
        return query, named

    def _search(self, query: Query, named: list[str], mode: str, embedder: Embedder | None,
                trace: Trace) -> dict[str, Ranked]:
        """Every ranked list the mode uses, each scoped to `named` (fetched deeper first when scoped)."""
        cfg, over = self.config, SCOPE_OVERFETCH if named else 1
        # With the second embedder in use, the other lists reach deeper: their votes then decide among
        # its candidates; alone, deeper lists only add noise (docs/decisions.md, "List depth").
        second = mode == "hybrid" and self.second is not None and self.second.available()
        dense_depth, bm25_depth = (cfg.depth_with_second,) * 2 if second else (cfg.dense_depth, cfg.bm25_depth)
        # The second embedder's question vector is most of retrieval's time: its search starts now,
        # on a thread of its own, while MiniLM, BM25 and the identifiers run (torch and numpy let go
        # of the GIL), and is collected before fusion (docs/decisions.md, "Retrieval latency").
        pending = _second_pool().submit(self._timed_second_search, query.search_text,
                                        cfg.depth_with_second * over) if second else None
        lists: dict[str, Ranked] = {}
        if mode in ("hybrid", "dense"):
            with trace.timed("embed", getattr(embedder, "name", "")):
                vector = embedder.embed_query([query.search_text])[0]
            with trace.timed("dense", f"FAISS inner product, depth {dense_depth}") as stage:
                lists["dense"] = self._scoped(self.index.dense_search.search(vector, dense_depth * over), named,
                                              dense_depth)
                stage.items = self._items(lists["dense"])
        by_row: dict[int, float] = {}
        if mode in ("hybrid", "bm25"):
            tokens = self.tokenize(query.search_text)
            with trace.timed("bm25", f"BM25 tokens {tokens}, depth {bm25_depth}") as stage:
                hits = self.index.sparse_search.search(tokens, bm25_depth * over)
                lists["bm25"], by_row = self._scoped(hits.ranked, named, bm25_depth), hits.by_row
                stage.items = self._items(lists["bm25"])
        if mode != "hybrid":
            return lists
        lists.update(self._rewrite(query.search_text, lists["dense"], named, over, trace))
        lists.update(self._second_dense(pending, named, trace))
        with trace.timed("exact", f"verbatim identifiers / acronym definitions for "
                                  f"{query.identifiers or 'none'}") as stage:
            lists["exact"] = self.exact.search(query.identifiers, cfg.exact_depth, by_row, query.asks_definition)
            stage.items = self._items(lists["exact"])
        return lists

    def _fuse(self, lists: dict[str, Ranked], mode: str, trace: Trace) -> list[Candidate]:
        cfg = self.config
        with trace.timed("fuse") as stage:
            if mode == "hybrid":
                order = ("dense", "bm25", "exact")  # the fusion's tie order: the base lists first
                ordered = {**{name: lists[name] for name in order}, **{n: r for n, r in lists.items() if n not in order}}
                fused = fusion.rrf(ordered, k=cfg.rrf_k, weights=cfg.weights, parent_of=self.parent_of)
                stage.note = f"RRF k={cfg.rrf_k} weights={cfg.weights}; rerank window = top {cfg.rerank_top_n}"
            else:
                fused = fusion.single(mode, lists.get("dense") or lists.get("bm25") or [], self.parent_of)
                stage.note = f"{mode} only: no fusion"
            if cfg.parent_decay > 0:
                fused = fusion.by_parent(fused, decay=cfg.parent_decay, k=cfg.rrf_k)
                stage.note += f"; grouped by parent (decay {cfg.parent_decay})"
            stage.items = self._cand_items(fused, cfg.rerank_top_n)
        return fused

    def _rerank(self, query: Query, fused: list[Candidate], trace: Trace) -> list[Candidate]:
        with trace.timed("rerank") as stage:
            reranker = self.reranker()
            result = rerank(query.text, fused, reranker, top_n=self.config.rerank_top_n,
                            text_of=lambda c: self.child_text.get(c.child_id, ""),
                            missing_reason="" if reranker else self.reranker_missing())
            stage.items = [{"child": cid, "parent": self.parent_of.get(cid, ""), "score": round(s, 6)}
                           for cid, s in result.scored]
            stage.note = result.note
        if not result.applied:
            trace.notes.append(result.note)
        return result.candidates

    def _expand(self, query: Query, candidates: list[Candidate], k: int, trace: Trace) -> list:
        cfg = self.config
        ecfg = ExpandConfig(k=k, budget_tokens=self.settings.answer.context_tokens, max_per_section=cfg.max_per_section,
                            max_per_figure=cfg.max_per_figure, join_split_prose=cfg.join_split_prose,
                            weighted_budget=cfg.weighted_budget)
        with trace.timed("expand") as stage:
            passages, slots, decisions = expand(candidates, self.index.parents, query.text, ecfg, self.child_text)
            trace.add("caps", 0.0, decisions, f"max {cfg.max_per_section} parents per section, "
                                              f"{cfg.max_per_figure} per figure; capped ones backfill if room")
            stage.items = [{"rank": i, "parent": s.parent.id, "kind": s.parent.kind, "section": s.parent.section,
                            "hits": s.hits, "pieces": [p.parent.id for p in s.pieces],
                            "neighbours": list(s.parent.neighbours), "prev": s.parent.prev_id,
                            "next": s.parent.next_id, "tokens": count_tokens(s.text), "trimmed": s.trimmed}
                           for i, s in enumerate(slots, start=1)]
            tokens = sum(count_tokens(p.text) for p in passages)
            stage.note = f"{len(passages)} passages, {tokens} tokens of {ecfg.budget_tokens} budget"
        return passages

    def _focus(self, passages: list[Passage], followup: Resolution, trace: Trace) -> list[Passage]:
        """The passage whose heading a follow-up's own words name, read first (retrieval/focus.py)."""
        if not followup.focus:
            return passages
        ordered, moved = focused(passages, followup.focus)
        trace.add("focus", 0.0, [{"focus": followup.focus, "moved": moved.id if moved else None}],
                  f"the passage headed {heading(moved)!r} moved first" if moved else "order kept")
        return ordered

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

    def _compared(self, question: str, followup: Resolution, k: int, mode: str, start: float,
                  trace: Trace) -> Retrieval:
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

    # -- helpers
    def _scoped(self, ranked: Ranked, docs: list[str], depth: int) -> Ranked:
        """Keep the children of the documents the question names (all when it names none)."""
        if docs:
            ranked = [(cid, s) for cid, s in ranked if self.doc_of.get(cid) in docs]
        return ranked[:depth]

    def _items(self, ranked: Ranked) -> list[dict]:
        return [{"rank": r, "child": cid, "parent": self.parent_of.get(cid, ""), "score": round(s, 6),
                 "text": self.child_text.get(cid, "")[:200]}
                for r, (cid, s) in enumerate(ranked[: self.config.trace_depth], start=1)]

    def _cand_items(self, cands: list[Candidate], cut: int | None = None) -> list[dict]:
        return [{"rank": r, "child": c.child_id, "parent": c.parent_id, "score": round(c.score, 6),
                 "ranks": dict(c.ranks), "scores": {k: round(v, 6) for k, v in c.scores.items()},
                 "in_window": cut is None or r <= cut, "text": self.child_text.get(c.child_id, "")[:200]}
                for r, c in enumerate(cands[: self.config.trace_depth], start=1)]

    def _timed_second_search(self, search_text: str, depth: int) -> tuple[list[tuple[int, float]], float]:
        t = time.perf_counter()
        found = self.second.search(search_text, depth)
        return found, (time.perf_counter() - t) * 1000

    def _second_dense(self, pending: Future | None, named: list[str], trace: Trace) -> dict[str, Ranked]:
        """The second embedder's ranked list ("dense2") from the search started in `_search`, once
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

    def _rewrite(self, search_text: str, dense: Ranked, named: list[str], over: int, trace: Trace) -> dict[str, Ranked]:
        """The rewrite's ranked lists ("rewrite_dense", "rewrite_bm25") when retrieval is weak and
        rewriting is on; {} otherwise. The refusal gate still reads the question's own dense list."""
        cfg = self.config.rewrite
        if not (cfg.enabled and self.rewriter is not None):
            return {}
        top = dense[0][1] if dense else 0.0
        if top >= cfg.below:
            trace.add("rewrite", 0.0, [], f"not needed: top dense score {top:.3f} >= {cfg.below}")
            return {}
        lists: dict[str, Ranked] = {}
        with trace.timed("rewrite") as stage:
            rewrite = self.rewriter(search_text, cfg)
            if rewrite.text:
                depth = self.config.dense_depth
                vector = self.embedder().embed([rewrite.text])[0]  # document side: it reads like one
                lists["rewrite_dense"] = self._scoped(self.index.dense_search.search(vector, depth * over), named, depth)
                if cfg.bm25:
                    hits = self.index.sparse_search.search(self.tokenize(rewrite.text), self.config.bm25_depth * over)
                    lists["rewrite_bm25"] = self._scoped(hits.ranked, named, self.config.bm25_depth)
            stage.items = [rewrite.to_dict()] + self._items(lists.get("rewrite_dense", []))
            stage.note = (f"top dense score {top:.3f} < {cfg.below}: the reader's passage ({rewrite.status}, "
                          f"{rewrite.ms:.0f} ms) searched too" + (f"; {rewrite.note}" if rewrite.note else ""))
        return lists

    def with_config(self, **changes) -> "Retriever":
        """A retriever sharing this one's index and models with some settings changed (for tuning)."""
        clone = object.__new__(Retriever)
        clone.__dict__.update(self.__dict__)
        clone.config = updated(self.config, changes, "retrieval")
        clone.exact = ExactSearch(clone.children, clone.config)
        if "second_embedder" in changes:
            name = clone.config.second_embedder
            clone.second = clone._second_for(name) if name else None
        return clone

"""The engine as one object per process, and the one place its parts are wired together:
settings, the model registry, the reader queue, the loaded index, the retriever and the answer
pipeline, each created lazily and once and handed to the parts that use them. The CLI and the
web app both hold one Runtime; no stage calls back into it."""
from __future__ import annotations

import threading
from typing import Iterator

from ..config import Settings, load_settings
from .backends.select import ModelRegistry
from .errors import IndexMissing
from .answer.events import Error as ErrorEvent
from .answer.events import Event, Final
from .backends.queue import Ticket
from .backends.shared_queue import reader_queue
from .types import Answer, Failure, Retrieval


class Runtime:
    def __init__(self, settings: Settings | None = None, models: ModelRegistry | None = None, index=None):
        """`models` and `index` are built from the settings on first use unless handed in (a test
        passes a registry whose reader is a named test double, over an index already loaded)."""
        self.settings = settings or load_settings()
        self._models = models
        self._lock = threading.RLock()
        self._index = index
        self._retriever = None
        self._small_talk = None
        self._pipeline = None
        self.queue = reader_queue(self.settings)  # in memory, or in the database for several processes

    def derived(self, changes: dict, label: str = "") -> "Runtime":
        """A Runtime with `changes` applied to the settings (nested tables, as `config.updated`
        takes them), e.g. {"answer": {"k": 4}}, for comparing settings. It shares this one's reader
        queue (an eval run still yields to chat), and its models and index when those are unchanged."""
        from ..config import updated

        settings = updated(self.settings, changes, label)
        same_models = (settings.backends == self.settings.backends and settings.models_dir == self.settings.models_dir)
        derived = Runtime(settings, self.models if same_models else None)
        derived.queue = self.queue
        if settings.index_dir == self.settings.index_dir:
            derived._index = self._index
        return derived

    @property
    def models(self) -> ModelRegistry:
        with self._lock:
            if self._models is None:
                self._models = ModelRegistry(self.settings)
            return self._models

    @property
    def index(self):
        from .index.index import Index

        with self._lock:
            if self._index is None:
                if not Index.exists(self.settings.index_dir):
                    raise IndexMissing(f"No index at {self.settings.index_dir}. Run `nistchat ingest` "
                                       f"(corpus: {self.settings.corpus}).")
                self._index = Index.load(self.settings.index_dir)
            return self._index

    def reload_index(self) -> None:
        with self._lock:
            self._index = None
            self._retriever = None
            self._pipeline = None

    @property
    def retriever(self):
        from .index import SecondDense
        from .retrieval import Retriever, Rewriter, Translator

        with self._lock:
            if self._retriever is None:
                index, models, settings = self.index, self.models, self.settings

                def second(name: str) -> SecondDense:
                    return SecondDense(index, settings.index_dir, settings.models_dir, name,
                                       embedder=lambda: models.second_embedder(name))

                self._retriever = Retriever(index, settings, embedder=models.embedder, reranker=models.reranker,
                                            reranker_missing=models.reranker_missing,
                                            rewriter=Rewriter(models.reader, self.queue), second=second,
                                            translator=Translator(models.reader, self.queue, models.pace))
            return self._retriever

    @property
    def small_talk(self):
        """The small-talk classifier over the question embedder (None when turned off or no embedder
        can be loaded: then every message is searched)."""
        from .answer.smalltalk import SmallTalkClassifier

        opts = self.settings.small_talk
        if not opts.enabled:
            return None
        with self._lock:
            if self._small_talk is None:
                embedder = self.models.optional("embedder")
                if embedder is None:
                    return None
                self._small_talk = SmallTalkClassifier(embedder, min_score=opts.min_score, margin=opts.margin)
            return self._small_talk

    def documents(self) -> list:
        """The indexed documents (`catalog.DocEntry`: id, title, label), in index order."""
        from .corpus.catalog import documents

        return documents(self.index)

    def unknown_docs(self, docs) -> str:
        """Why a document choice cannot be used ('' when every id is in the index)."""
        from .retrieval.retriever import unknown_docs_message

        known = [d.id for d in self.documents()]
        if not isinstance(docs, (list, tuple)) or not all(isinstance(d, str) for d in docs):
            return f"docs must be a list of document ids. Known: {', '.join(known)}."
        return unknown_docs_message(docs, known) if any(d not in known for d in docs) else ""

    def retrieve(self, question: str, *, k: int = 6, history: list[dict] | None = None,
                 mode: str = "hybrid", docs: list[str] | None = None) -> Retrieval:
        """`docs` limits the search to those document ids (empty or None: all documents)."""
        return self.retriever.retrieve(question, k=k, history=history, mode=mode, docs=docs)

    @property
    def pipeline(self):
        from .answer.pipeline import Pipeline

        with self._lock:
            if self._pipeline is None:
                self._pipeline = Pipeline(self.settings, models=self.models, queue=self.queue,
                                          retriever=lambda: self.retriever, small_talk=lambda: self.small_talk)
            return self._pipeline

    def answer(self, question: str, history: list[dict] | None = None, *, label: str | None = None,
               direct_answer: str | None = None, ticket: Ticket | None = None,
               docs: list[str] | None = None) -> Iterator[Event]:
        """Events of one answer (`answer.events`). `ticket` is the caller's place in `self.queue`
        (taken when the question was asked, so a full queue is refused before anything is stored),
        handed over to the answer, which finishes it; without one the answer takes an uncapped
        ticket of its own. `docs` limits retrieval to those documents."""
        return self.pipeline.answer(question, history or [], label=label, direct_answer=direct_answer, ticket=ticket,
                                    docs=docs)

    def ask(self, question: str, history: list[dict] | None = None, *,
            docs: list[str] | None = None) -> Answer | Failure:
        """The whole answer at once, typed: `Answer`, or `Failure` when it could not be completed."""
        for event in self.answer(question, history, docs=docs):
            if isinstance(event, Final):
                return event.answer
            if isinstance(event, ErrorEvent):
                return event.failure
        return Failure("interrupted", "The answer stream ended without a result.")

"""Typed values that flow between the engine's stages.

Everything here is plain data (JSON-friendly via `to_dict`) so the CLI, the web layer and the
tests can show any stage's output without knowing how it was made.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Kind = Literal["prose", "table", "figure", "list"]


@dataclass
class Block:
    """One structural unit read from a document, before chunking."""
    kind: Kind
    text: str
    heading_path: list[str]
    page: int | None = None
    caption: str = ""  # table title or figure title, kept with the block
    header: list[str] = field(default_factory=list)  # tables: column names
    rows: list[list[str]] = field(default_factory=list)  # tables: body cells, one list per row


@dataclass
class Document:
    doc_id: str  # file stem, e.g. "NIST.AI.800-4"
    title: str
    source: str  # file name the document came from
    sha256: str
    blocks: list[Block]


@dataclass
class Parent:
    """A semantic unit handed to the reader: prose run, whole table, figure description or list."""
    id: str
    doc: str
    title: str
    heading_path: list[str]
    kind: Kind
    text: str
    page: int | None = None
    prev_id: str | None = None
    next_id: str | None = None
    neighbours: list[str] = field(default_factory=list)  # e.g. other segments of the same table

    @property
    def section(self) -> str:
        return " > ".join(self.heading_path)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Child:
    """A small retrieval unit inside a parent; what the dense and sparse indexes hold."""
    id: str
    parent_id: str
    doc: str
    kind: Kind
    text: str  # text as embedded / indexed (may carry the table header or heading context)
    in_bm25: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Candidate:
    """A child during search, with the scores each stage gave it."""
    child_id: str
    parent_id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)


@dataclass
class Passage:
    """What the reader receives and the user sees as a source."""
    rank: int
    id: str
    doc: str
    title: str
    section: str
    kind: Kind
    page: int | None
    text: str
    score: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class StageTrace:
    name: str
    ms: float
    items: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""


@dataclass
class Trace:
    """Every stage's output, in order, so a person can replay why an answer looks as it does."""
    stages: list[StageTrace] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, name: str, ms: float, items: list[dict] | None = None, note: str = "") -> StageTrace:
        stage = StageTrace(name, round(ms, 2), items or [], note)
        self.stages.append(stage)
        return stage

    def stage(self, name: str) -> StageTrace | None:
        return next((s for s in self.stages if s.name == name), None)

    def to_dict(self) -> dict:
        return {"stages": [asdict(s) for s in self.stages], "notes": list(self.notes)}


@dataclass(frozen=True)
class Resolution:
    """How one turn of a conversation was understood (retrieval/followup.py): what retrieval
    searches for, why, and within which documents."""
    question: str  # the standalone question searched for (the turn itself when it stands alone)
    why: str  # one line for the trace ("standalone" when nothing was resolved)
    kind: str = "standalone"  # standalone | new_topic | follow_up | item | correction | comparison | acts_on_previous
    scope: tuple[str, ...] = ()  # documents the search is limited to (carried over or named); () = all
    compare: bool = False  # retrieve from each scope document separately (a comparison)
    leans_on_answered: bool = False  # a follow-up whose previous turn was answered: the gate never refuses it
    reuse: tuple[Passage, ...] = ()  # acts on the previous answer: these passages, no new search
    frame: str = ""  # the question an ellipsis swaps its words into (a chain of "and X?" keeps the first)
    ask: str = ""  # what the reader is asked instead of the turn's words ('' = the turn as typed)

    @property
    def resolved(self) -> bool:
        return self.kind not in ("standalone", "new_topic")

    def to_dict(self) -> dict:
        return {"resolved_question": self.question, "why": self.why, "kind": self.kind, "scope": list(self.scope),
                "compare": self.compare, "leans_on_answered": self.leans_on_answered,
                "reused_passages": [p.id for p in self.reuse], "reader_question": self.ask}


@dataclass
class Retrieval:
    question: str
    passages: list[Passage]
    trace: Trace
    timings_ms: dict[str, float]
    list_count: int | None = None  # "the four tiers": the items a list answer should have (verify.count_mismatch)
    followup: Resolution | None = None  # how the turn was understood against the conversation (retrieval.followup)

    def to_dict(self) -> dict:
        return {
            "question": self.question,
            "passages": [p.to_dict() for p in self.passages],
            "trace": self.trace.to_dict(),
            "timings_ms": self.timings_ms,
        }


@dataclass
class Verdict:
    text: str
    supported: bool
    passage: int | None  # 1-based rank of the supporting passage, if any
    reason: str = ""  # the string rule that decided instead of the verifier, when one did


EventType = Literal["sources", "queue", "token", "verdict", "retry", "final", "error"]
ErrorKind = Literal["unreachable", "model_missing", "timeout", "interrupted", "bad_input"]


@dataclass
class Event:
    """One item of `engine.answer()`'s stream (the contract the page and the CLI consume).

    sources: {"passages": [...]} · token: {"text"} · verdict: {"text", "supported", "passage"}
    queue: {"ahead"} (answers using the reader before this one) · retry: {"reason"}
    final: {"answer", "refused", "risk", "disclaimer", "sources", ...}
    error: {"kind", "message", "partial"}
    """
    type: EventType
    data: dict[str, Any]

    def to_dict(self) -> dict:
        return {"type": self.type, **self.data}


@dataclass
class Source:
    """A passage as listed under an answer (numbered as the reader saw it)."""
    rank: int
    id: str
    doc: str
    title: str
    section: str
    page: int | None
    kind: str
    score: float
    cited: bool  # the answer cites it as [rank], or the checker matched one of its sentences to it
    checker_sentences: list[str] = field(default_factory=list)  # unmarked sentences the checker matched to it


@dataclass
class Answer:
    """A finished answer, for Python callers (`Runtime.ask`); the event stream carries the same data."""
    question: str
    text: str
    refused: bool
    risk: str  # HIGH | LOW
    verified: bool  # every sentence was checked by the verifier
    flagged: bool  # some sentence is not supported by the passages
    retried: bool
    sentences: list[Verdict]
    sources: list[Source]
    disclaimer: str = ""
    refusal_reason: str = ""
    backend: dict[str, str] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    trace: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_final(cls, data: dict) -> "Answer":
        return cls(question=data.get("question", ""), text=data["answer"], refused=data["refused"], risk=data["risk"],
                   verified=data["verified"], flagged=data.get("flagged", False), retried=data["retried"],
                   sentences=[Verdict(s["text"], s["supported"], s.get("passage"), s.get("reason", ""))
                              for s in data.get("sentences", [])],
                   sources=[Source(**{k: s.get(k) for k in Source.__dataclass_fields__}) for s in data.get("sources", [])],
                   disclaimer=data.get("disclaimer", ""), refusal_reason=data.get("refusal_reason", ""),
                   backend=data.get("backend", {}), timings_ms=data.get("timings_ms", {}), trace=data.get("trace", {}))


@dataclass
class Failure:
    """An answer that could not be completed: why (`kind`, the `error` event's kinds), a message for
    a person, and the text streamed before the failure (incomplete, never passed off as whole)."""
    kind: str
    message: str
    partial: str = ""

"""Typed values that flow between the engine's stages.

Everything here is plain data (JSON-friendly via `to_dict`) so the CLI, the web layer and the
tests can show any stage's output without knowing how it was made.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Literal, get_args

from .errors import error_line

Kind = Literal["prose", "table", "figure", "list"]
Ranked = list[tuple[str, float]]  # one search's children, best first: (child id, score)


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

    @contextlib.contextmanager
    def timed(self, name: str, note: str = "") -> Iterator[StageTrace]:
        """Time the block as stage `name` and add it when the block ends; the block fills in the
        stage's items and note. One timer for every stage, instead of one written per stage."""
        stage = StageTrace(name, 0.0, [], note)
        start = time.perf_counter()
        yield stage
        stage.ms = round((time.perf_counter() - start) * 1000, 2)
        self.stages.append(stage)

    def ms(self, name: str) -> float:
        """The stage's time (0.0 when it did not run)."""
        stage = self.stage(name)
        return stage.ms if stage else 0.0

    def to_dict(self) -> dict:
        return {"stages": [asdict(s) for s in self.stages], "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: dict) -> "Trace":
        """A trace back from `to_dict` (an answer carries its trace serialised)."""
        return cls([StageTrace(**s) for s in data.get("stages", [])], list(data.get("notes", [])))


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
    slot: str = ""  # the part of `frame` an ellipsis replaces when no name of a kind swaps (a drill-down's item)
    ask: str = ""  # what the reader is asked instead of the turn's words ('' = the turn as typed)
    subject: str = ""  # what the turn's "it" stands for: the one document it leans on, as pages name it
    focus: str = ""  # what the turn adds of its own: an ellipsis's words ("and for X?" -> "X"), the item picked
    items: tuple[str, ...] = ()  # the list a drill-down picked `slot` from, kept for "and the 4th one?" after it
    # the drill-down a turn still speaks of (a rewrite of its answer, a question leaning on it), so
    # that "and the 4th one?" after such a turn points into that list, not into a list of its answer's prose
    drilled: "Resolution | None" = None
    # a comparison (and a rewrite of its answer): the question it compares and the turn as typed, so
    # that "no, I meant the other report" after it compares with the document meant
    compared: tuple[str, str] = ()
    rewritten: str = ""  # a turn acting on an earlier answer: that answer (the previous one, or the list drilled into)

    @property
    def resolved(self) -> bool:
        return self.kind not in ("standalone", "new_topic")

    def to_dict(self) -> dict:
        return {"resolved_question": self.question, "why": self.why, "kind": self.kind, "scope": list(self.scope),
                "compare": self.compare, "leans_on_answered": self.leans_on_answered,
                "reused_passages": [p.id for p in self.reuse], "reader_question": self.ask, "subject": self.subject,
                "focus": self.focus}


@dataclass
class Retrieval:
    question: str
    passages: list[Passage]
    trace: Trace
    timings_ms: dict[str, float]
    list_count: int | None = None  # "the four tiers": the items a list answer should have (verify.count_mismatch)
    followup: Resolution | None = None  # how the turn was understood against the conversation (retrieval.followup)
    english: str = ""  # a question typed in another language, as translated for the search (retrieval.translate)

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


@dataclass
class Source:
    """A passage as listed under an answer (numbered as the reader saw it), with its text so a
    stored answer can show the supporting passage."""
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
    text: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def verdict_dict(v: Verdict) -> dict:
    """A verdict as the wire and the store carry it (`reason` only when a string rule decided)."""
    out = {"text": v.text, "supported": v.supported, "passage": v.passage}
    if v.reason:
        out["reason"] = v.reason
    return out


@dataclass
class Answer:
    """A finished answer: the `final` event's content, what the store keeps and the CLI prints."""
    text: str
    question: str = ""
    refused: bool = False
    risk: str = ""  # HIGH | LOW ("" for small talk)
    verified: bool = False  # every sentence was checked by the verifier
    flagged: bool = False  # some sentence is not supported by the passages
    retried: bool = False
    sentences: list[Verdict] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    disclaimer: str = ""
    refusal_reason: str = ""
    risk_kinds: list[str] = field(default_factory=list)
    marks: dict[str, int] = field(default_factory=dict)  # checkable sentences, marked by the reader, by the checker
    backend: dict[str, str] = field(default_factory=dict)
    timings_ms: dict[str, float | None] = field(default_factory=dict)
    prompt_tokens: int = 0
    queue_ms: float = 0.0
    attempts: list[dict[str, Any]] = field(default_factory=list)
    label: str = ""  # what the person saw (a topic button's label, else the question)
    docs: list[str] = field(default_factory=list)  # the documents the search was limited to
    searched_for: str = ""  # a follow-up's standalone question, shown as "Searched for" ('' for a standalone one)
    trace: dict[str, Any] = field(default_factory=dict)
    gate: dict[str, Any] | None = None  # the refusal gate's decision, when retrieval ran
    chosen_attempt: int | None = None
    direct: bool = False  # a configured answer or small talk: no passage, no reader
    small_talk: str = ""  # the small-talk kind, when it was one

    @property
    def retry_kept(self) -> bool:
        """Whether the answer is the retry's: a retry that did no better than the first draft leaves
        that draft in place, and the page must not call it rewritten."""
        return self.retried and self.chosen_attempt not in (None, 1)

    def to_dict(self) -> dict:
        """The wire form (the `final` event after its type; `/api/ask`, SSE, `nistchat ask --json`)."""
        out = {"answer": self.text, "refused": self.refused, "refusal_reason": self.refusal_reason, "risk": self.risk,
               "risk_kinds": self.risk_kinds, "verified": self.verified,
               "sentences": [verdict_dict(v) for v in self.sentences], "flagged": self.flagged,
               "retried": self.retried, "disclaimer": self.disclaimer,
               "sources": [s.to_dict() for s in self.sources], "marks": self.marks, "backend": self.backend,
               "timings_ms": self.timings_ms, "prompt_tokens": self.prompt_tokens, "queue_ms": self.queue_ms,
               "attempts": self.attempts, "question": self.question, "label": self.label, "docs": self.docs,
               "searched_for": self.searched_for, "trace": self.trace}
        if self.direct:
            out["direct"] = True
        if self.small_talk:
            out["small_talk"] = self.small_talk
        if self.gate is not None:
            out["gate"] = self.gate
        if self.chosen_attempt is not None:
            out["chosen_attempt"] = self.chosen_attempt
        return out


ErrorKind = Literal["unreachable", "model_missing", "index_missing", "timeout", "interrupted", "bad_input",
                    "internal"]
ERROR_KINDS: tuple[str, ...] = get_args(ErrorKind)  # every producer of an `error` event uses one of these


@dataclass
class Failure:
    """An answer that could not be completed: why (`kind`, one of ERROR_KINDS), a message for a
    person, and the text streamed before the failure (incomplete, never passed off as whole)."""
    kind: ErrorKind
    message: str
    partial: str = ""

    @property
    def incomplete(self) -> bool:
        return bool(self.partial)

    @property
    def line(self) -> str:
        return error_line(self.kind, self.message)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "partial": self.partial, "incomplete": self.incomplete}

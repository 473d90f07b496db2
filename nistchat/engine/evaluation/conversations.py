"""Retrieval on conversations: do follow-up turns get their evidence as often as first turns?

Every other evaluation asks one question at a time; people follow up ("and for MEASURE?", "the 2nd
one", "does the Profile agree?"). Each conversation of the set
(data/eval/conversations_dev.jsonl, conversations_test.jsonl) is run turn by turn through the
retriever with the history the chat would pass: every earlier user question and, as the assistant's
text, that turn's *expected* answer, with the passages retrieved for it as its sources. The real
answers are not generated (that would take the reader minutes per conversation and make retrieval depend on the reader's luck), so retrieval is measured
as if each previous answer had been the expected one -- the best case for anything that reads the
previous answer.

The score is the retrieval evaluation's evidence-hit@k (`evaluate.missing_evidence`: every evidence
string inside one of the k passages), reported for first turns against follow-up turns and per kind
of turn, dev and test side by side.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..retrieval import Retriever
from ..types import Retrieval, Trace
from .retrieval import first_file, missing_evidence

KINDS = ("first", "ellipsis", "pronoun", "drill_down", "correction", "comparison", "act_on_previous",
         "new_topic", "other_language", "false_premise")
SET_FILES = {"dev": "conversations_dev.jsonl", "dev2": "conversations_dev2.jsonl", "test": "conversations_test.jsonl",
             "test2": "conversations_test2.jsonl"}
# Single questions of the office splits translated into Spanish, German and French, written as one-turn
# conversations (evaluation/languages.py): read beside a split's conversations by `--languages`. Each
# split has two files: every other answerable question, then the rest with the questions the corpus
# does not answer.
LANGUAGE_FILES = {"dev": ("languages_dev.jsonl", "languages_dev2.jsonl"),
                  "test": ("languages_test.jsonl", "languages_test2.jsonl")}
# The second set's halves (dev2, held-out test2) were written later, with more pronoun and
# other-language follow-ups than the first: `all` reads the four side by side.
SET_GROUPS = {"both": ("dev", "test"), "all": ("dev", "dev2", "test", "test2")}
SET_SPECS = (*SET_FILES, *SET_GROUPS)


@dataclass(frozen=True)
class Turn:
    question: str
    kind: str
    doc: str | list[str] | None
    evidence: list[str]
    key_terms: list[str]
    answer: str
    english: str = ""  # an other-language turn's question in English (evaluation/languages.py)
    key_terms_typed: list[str] = field(default_factory=list)  # an other-language turn's key terms in its language


@dataclass(frozen=True)
class Conversation:
    id: str
    turns: list[Turn]


GATE = "off_topic"  # the refusal_reason of a refusal before generation (answer/refusal.py's gate)


@dataclass
class TurnResult:
    conversation: str
    index: int  # 0-based position in the conversation
    kind: str
    question: str
    hit: bool
    missing: list[str]
    search_text: str  # what retrieval searched for (the follow-up rewrite shows here)
    passages: list[dict]
    ms: float
    expected: Turn | None = None
    refused: bool = False  # the refusal gate would refuse it before generation (with answers: it was refused)
    refusal: str = ""  # why it was refused: GATE (before generation), else the answer's refusal_reason
    answer: str | None = None  # with answers: the reader's text (None: retrieval only)
    key_terms: float | None = None  # with answers: share of the turn's key terms in the answer
    translation: str = ""  # a turn in another language: how its translation went ("done", "deadline", ...)
    error: str = ""  # with answers: the reader failed ("kind: message"); `answer` is what it wrote before

    @property
    def follow_up(self) -> bool:
        return self.index > 0

    @property
    def gate_refused(self) -> bool:
        """Refused before generation: the reader declining, or nothing it wrote checking out, is
        another matter (the issue's target is about the gate)."""
        return self.refused and self.refusal == GATE

    @property
    def id(self) -> str:
        return f"{self.conversation}.{self.index + 1}"


@dataclass
class Tally:
    n: int = 0
    hits: int = 0
    refused: int = 0
    gate: int = 0  # of the refusals, those made by the gate before generation
    failed: int = 0  # answers the reader did not finish (scored on what it wrote before)
    terms: list[float] = field(default_factory=list)  # key-term shares, when answers were generated

    @property
    def rate(self) -> float | None:
        return round(self.hits / self.n, 4) if self.n else None

    @property
    def key_terms(self) -> float | None:
        return round(sum(self.terms) / len(self.terms), 4) if self.terms else None

    def add(self, hit: bool, refused: bool = False, key_terms: float | None = None, gate: bool = False,
            failed: bool = False) -> None:
        self.n += 1
        self.hits += int(hit)
        self.refused += int(refused)
        self.gate += int(gate)
        self.failed += int(failed)
        if key_terms is not None:
            self.terms.append(key_terms)


@dataclass
class ConversationReport:
    k: int
    turns: list[TurnResult] = field(default_factory=list)

    def tally(self, pick) -> Tally:
        t = Tally()
        for r in self.turns:
            if pick(r):
                t.add(r.hit, r.refused, r.key_terms, r.gate_refused, bool(r.error))
        return t

    @property
    def answered(self) -> bool:
        """The turns were answered by the reader (`conversation_answers`), not only retrieved."""
        return any(r.answer is not None for r in self.turns)

    @property
    def n_conversations(self) -> int:
        return len({r.conversation for r in self.turns})

    def summary(self) -> dict:
        """First turns (position 1) against follow-ups (positions 2+), all turns, and per kind."""
        groups = {"first turns": self.tally(lambda r: not r.follow_up),
                  "follow-up turns": self.tally(lambda r: r.follow_up),
                  "all turns": self.tally(lambda r: True)}
        kinds = {kind: self.tally(lambda r, kind=kind: r.kind == kind) for kind in KINDS}
        as_dict = lambda t: {"n": t.n, "hits": t.hits, "hit": t.rate, "refused": t.refused,  # noqa: E731
                             "gate_refused": t.gate, "failed": t.failed,
                             **({"key_terms": t.key_terms} if t.terms else {})}
        return {"k": self.k, "conversations": self.n_conversations,
                "groups": {g: as_dict(t) for g, t in groups.items()},
                "kinds": {kd: as_dict(t) for kd, t in kinds.items() if t.n}}

    def misses(self) -> list[TurnResult]:
        return [r for r in self.turns if not r.hit]


def load_conversations(path: Path) -> list[Conversation]:
    out = []
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                out.append(Conversation(row["id"], [Turn(t["question"], t["kind"], t.get("doc"), list(t["evidence"]),
                                                         list(t.get("key_terms", [])), t.get("answer", ""),
                                                         t.get("english", ""), list(t.get("key_terms_typed", [])))
                                                    for t in row["turns"]]))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{lineno}: not a conversation ({exc})") from None
    return out


def resolve_sets(spec: str, eval_dirs: list[Path], *, languages: bool = False) -> dict[str, Path]:
    """`dev`, `test`, `both` or a JSONL file -> {set name: path}; the first of `eval_dirs` holding
    the file wins. With `languages`, each named split also brings its translated questions
    (`dev questions`, `dev questions 2`, from LANGUAGE_FILES), the files that exist."""
    if spec not in SET_SPECS:
        if Path(spec).is_file():
            return {Path(spec).stem: Path(spec)}
        raise ValueError(f"No conversation set {spec!r}: say {', '.join(SET_SPECS)} or a JSONL file.")
    found = {}
    for name in SET_GROUPS.get(spec, (spec,)):
        path = first_file(eval_dirs, SET_FILES[name])
        if path is None:
            raise ValueError(f"No {name} conversation set ({SET_FILES[name]} in {', '.join(map(str, eval_dirs))}).")
        found[name] = path
        for i, file in enumerate(LANGUAGE_FILES.get(name, ()) if languages else ()):
            if (questions := first_file(eval_dirs, file)) is not None:
                found[f"{name} questions" + (f" {i + 1}" if i else "")] = questions
    return found


def _traced(trace: Trace, stage_name: str, key: str) -> str:
    """`key` of the first item the trace holds for stage `stage_name` ('' if none)."""
    stage = trace.stage(stage_name)
    return str(stage.items[0].get(key, "")) if stage and stage.items else ""


def translation_of(trace: Trace) -> str:
    """The translation's status from a retrieval's or an answer's trace ('' when the question was not translated)."""
    return _traced(trace, "translate", "status")


def search_text_of(trace: Trace) -> str:
    """What the retrieval searched for, from its trace (a follow-up's rewrite, a translation)."""
    return _traced(trace, "query", "search_text")


STORED_KEYS = ("id", "rank", "doc", "section", "text")


def stored(passages: list[dict]) -> list[dict]:
    """A turn's passages as a run keeps them: the text to read, and the id and number under which
    a replay gives them back as that turn's sources (a rewrite is answered from them)."""
    return [{key: p.get(key) for key in STORED_KEYS} for p in passages]


def run_conversations(retriever: Retriever, conversations: list[Conversation], *, k: int = 6, on_turn=None,
                      gate: Callable[[Retrieval], bool] | None = None) -> ConversationReport:
    """Every turn of every conversation through `retriever.retrieve` with the history before it.
    Turns without evidence are skipped (none in the shipped sets); `on_turn(result)` after each;
    `gate(retrieval) -> bool` (the refusal gate) counts the turns it would refuse."""
    report = ConversationReport(k=k)
    for conv in conversations:
        history: list[dict] = []
        for index, turn in enumerate(conv.turns):
            if not turn.evidence:
                history += [{"role": "user", "content": turn.question}, {"role": "assistant", "content": turn.answer}]
                continue
            result = retriever.retrieve(turn.question, k=k, history=list(history))
            # as chat.store.engine_history passes it: the passages this turn's answer was given
            history += [{"role": "user", "content": turn.question},
                        {"role": "assistant", "content": turn.answer,
                         "sources": [{**p.to_dict(), "cited": False} for p in result.passages]}]
            texts = [p.text for p in result.passages]
            refused = bool(gate(result)) if gate else False
            missing = missing_evidence(turn.evidence, texts)
            row = TurnResult(conv.id, index, turn.kind, turn.question, not missing, missing, search_text_of(result.trace),
                             stored([p.to_dict() for p in result.passages]),
                             round(result.timings_ms.get("total", 0.0), 1), turn,
                             refused, GATE if refused else "", translation=translation_of(result.trace))
            report.turns.append(row)
            if on_turn:
                on_turn(row)
    return report


def _share(entry: dict) -> str:
    return "-" if entry.get("key_terms") is None else f"{entry['key_terms']:.2f}"


def format_table(reports: dict[str, ConversationReport], *, misses: bool = True) -> str:
    """One column per set: evidence-hit@k for first turns, follow-ups, all, then per kind."""
    names = list(reports)
    summaries = {n: r.summary() for n, r in reports.items()}
    k = next(iter(reports.values())).k

    def cell(entry: dict | None) -> str:
        if not entry or not entry["n"]:
            return "-"
        return f"{entry['hits']}/{entry['n']} ({entry['hit']:.2f})"

    rows = [("", names),
            ("conversations", [str(summaries[n]["conversations"]) for n in names])]
    for group in ("first turns", "follow-up turns", "all turns"):
        rows.append((f"{group} evidence-hit@{k}", [cell(summaries[n]["groups"][group]) for n in names]))
    answered = any(rep.answered for rep in reports.values())
    if answered:
        for group in ("first turns", "follow-up turns", "all turns"):
            rows.append((f"{group} key-term share", [_share(summaries[n]["groups"][group]) for n in names]))
    for group in ("first turns", "follow-up turns"):
        rows.append((f"{group} refused" + ("" if answered else " by the gate"),
                     [str(summaries[n]["groups"][group]["refused"]) for n in names]))
        if answered:
            rows.append(("  of them by the gate", [str(summaries[n]["groups"][group]["gate_refused"]) for n in names]))
            rows.append((f"{group} the reader did not finish",
                         [str(summaries[n]["groups"][group]["failed"]) for n in names]))
    for kind in KINDS:
        rows.append((f"  {kind}", [cell(summaries[n]["kinds"].get(kind)) for n in names]))
    label_w = max(len(r[0]) for r in rows) + 2
    width = max(16, *(len(v) + 2 for _label, values in rows for v in values))
    lines = [f"{label:<{label_w}}" + "".join(f"{v:>{width}}" for v in values) for label, values in rows]
    if misses:
        for name, rep in reports.items():
            lines.append("")
            lines.append(f"{name} misses ({len(rep.misses())}):")
            for r in rep.misses():
                lines.append(f"  {r.id} [{r.kind}] {r.question}" + ("  (refused by the gate)" if r.gate_refused else
                                                                     f"  (refused: {r.refusal})" if r.refused else ""))
                if r.search_text and r.search_text != r.question.lower():
                    lines.append(f"      searched for: {r.search_text!r}")
                for e in r.missing:
                    lines.append(f"      missing: {e!r}")
    return "\n".join(lines)

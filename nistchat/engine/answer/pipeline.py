"""The answer pipeline: question -> stream of typed events (answer/events.py; docs/api.md).

sources → token… → verdict… → [retry → token… → verdict…] → final, or error at any point.
Stages: validate, small talk, risk, retrieve, premise, refusal gate, the reader's turn, prompt,
generate, verify, retry, citations, refusal after generation. Each lands in the trace with its timing, so a
person can see why an answer looks as it does. `Pipeline` is handed every part it uses (the
retriever, the model registry's typed getters, the reader queue, the small-talk classifier);
the web layer and the CLI consume `Pipeline.answer`.
"""
from __future__ import annotations

import logging
import time
from functools import cached_property
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator

from ...config import Settings
from ..backends.base import AnswerJudge, Reader
from ..backends.queue import ReaderQueue, Ticket
from ..backends.select import ModelRegistry
from ..corpus.catalog import documents
from ..errors import BackendError, IndexMissing
from ..retrieval import Retriever
from ..retrieval.followup import answer_items, asks_brief, goes_on, turns_of
from ..retrieval.risk import Risk, classify
from ..text import count_tokens, split_sentences, without_source_line
from ..types import Answer, Failure, Passage, Resolution, Retrieval, Trace, Verdict, verdict_dict
from ..verification import citations, premise
from ..verification.verify import (ASKED_BACK, BARE_POLARITY, COPIED_BACK, COUNTED_NOT_LISTED, YES_AGAINST_NO,
                                   asked_back, bare_polarity,
                                   copied_back, count_mismatch, counted_not_listed, restates_question,
                                   says_dont_know, should_retry,
                                   support_counts, support_score, ungrounded_verdicts, verify_sentences, yes_against_no)
from . import refusal
from .events import Checked, Error, Event, Final, Prefill, Queue, Retry, Sources, Token
from .complete import CUT_NOTE, REST_REASON, list_rest, rest_lines, without_unfinished
from .generate import Sent, stream_answer
from .language import answer_language, source_line
from .prompt import (LIST_INSTRUCTION, REPEATED, RETRY_INSTRUCTION, build_messages, said_before, without_said,
                     without_scaffolding)
from .smalltalk import SmallTalkClassifier, is_refusal, may_follow_up, reply

log = logging.getLogger(__name__)

LIST_DISCLAIMER = "This list may be incomplete — check the source document."
LIST_RETRY = "the answer counted the items without naming them"  # the retry's reason; the page words it its own way
POLAR_RETRY = "the answer said yes and nothing the passages say"
DENIED_RETRY = "the answer said yes where its source says no"
PREMISE_RETRY = "the answer agreed with what the question assumes, which its source contradicts"
DECLINED_RETRY = "the draft found no answer, and a source contradicts what the question assumes"
COPY_RETRY = "the answer came back unshortened: its first sentence stands instead"
ASKED_RETRY = "the answer asked a question instead of answering"
# A draft the string checks caught dodging the question -> the retry's reason, and the reader's
# instruction for it (None: the retry quotes the passages, no reader call), in the order a retry
# takes them: an opening that agrees with a contradicted premise first (asked again, the reader
# agrees again). An attempt that dodges loses to one that does not (`_choose`).
_DODGES = {premise.AGREES_WITH_PREMISE: (PREMISE_RETRY, None), COUNTED_NOT_LISTED: (LIST_RETRY, LIST_INSTRUCTION),
           BARE_POLARITY: (POLAR_RETRY, None), YES_AGAINST_NO: (DENIED_RETRY, None), COPIED_BACK: (COPY_RETRY, None),
           ASKED_BACK: (ASKED_RETRY, None)}
QUEUE_TIMEOUT_S = 900.0  # the longest an answer waits for its turn at the reader


def question_problem(question, max_chars: int) -> str:
    """Why a question cannot be asked as given ('' when it can): the one check, with one set of
    messages, that the page, the API and the engine apply before any model is touched."""
    if not isinstance(question, str) or not question.strip():
        return "Please type a question first."
    if len(question) > max_chars:
        return f"That question is {len(question):,} characters long; the limit is {max_chars:,}. Please shorten it."
    return ""


@dataclass
class Attempt:
    n: int
    text: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    verified: bool = False  # every sentence was checked (not only the ones with bad citations)
    dont_know: bool = False
    prompt_tokens: int = 0
    generate_ms: float = 0.0
    prefill_ms: float = 0.0  # to the first piece: reading the prompt
    verify_ms: float = 0.0
    repair: citations.Repair | None = None
    messages: list[dict] = field(default_factory=list, repr=False)  # what the reader was sent, for the judge
    numbered: bool = False  # those messages number the passages, so a judge can be asked inside them
    cut: bool = False  # the reader stopped at the answer's length limit, and its unfinished end was left out
    named: list[Verdict] = field(default_factory=list)  # the lines naming the rest of a list, each supported

    @property
    def answer(self) -> str:
        return self.repair.text if self.repair else self.text

    @property
    def own_verdicts(self) -> list[Verdict]:
        """The verdicts on what the reader wrote: a list's rest named from its passage is supported
        by construction, and must not outweigh unsupported sentences in a retry or a refusal."""
        return [v for v in self.verdicts if v not in self.named]

    def to_dict(self) -> dict:
        passed, failed = support_counts(self.verdicts)
        return {"attempt": self.n, "text": self.text, "answer": self.answer, "verified": self.verified,
                "dont_know": self.dont_know, "supported": passed, "unsupported": failed,
                "sentences": [verdict_dict(v) for v in self.verdicts], "prompt_tokens": self.prompt_tokens,
                "generate_ms": round(self.generate_ms, 1), "prefill_ms": round(self.prefill_ms, 1),
                "verify_ms": round(self.verify_ms, 1), "cut": self.cut,
                "citations_dropped": self.repair.dropped if self.repair else [],
                "citations_mapped": self.repair.mapped if self.repair else []}


class _Stopped(Exception):
    """Generation failed part-way; carries the backend error and the text streamed so far."""

    def __init__(self, error: BackendError, partial: str):
        super().__init__(error.message)
        self.error, self.partial = error, partial


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


def _error(kind: str, message: str, partial: str = "") -> Error:
    return Error(Failure(kind, message, partial))


def _prompt_tokens(reader, messages: list[dict]) -> int:
    text = "\n".join(m["content"] for m in messages)
    counter = getattr(reader, "count_tokens", None)
    try:
        return (counter(text) if counter else count_tokens(text)) + 6 * len(messages)  # + chat template
    except Exception:  # counting is informational; never fail an answer over it
        return count_tokens(text)


class Pipeline:
    """One process's answer pipeline. Handed: the settings, the model registry (typed getters:
    `reader()`, `verifier()`, `embedder()`, `pace`), the reader queue, and getters for the
    retriever (raises IndexMissing before an index is built) and the small-talk classifier
    (None when off). A ticket handed to `answer` is the answer's: it is finished when the
    stream ends, however it ends."""

    def __init__(self, settings: Settings, *, models: ModelRegistry, queue: ReaderQueue,
                 retriever: Callable[[], Retriever],
                 small_talk: Callable[[], SmallTalkClassifier | None] = lambda: None):
        self.settings, self.models, self.queue = settings, models, queue
        self.retriever, self.small_talk = retriever, small_talk
        self._vocabulary: tuple[object, set[str]] | None = None  # (index, its words), for the gate

    def answer(self, question: str, history: list[dict] | None = None, *, label: str | None = None,
               direct_answer: str | None = None, ticket: Ticket | None = None,
               docs: list[str] | None = None) -> Iterator[Event]:
        """Stream one answer. `label` is what the user saw (topic buttons); `direct_answer` is a
        configured fixed answer that bypasses retrieval and the reader entirely; `ticket` is the
        answer's place in the reader queue (without one it takes an uncapped ticket when it needs
        the reader); `docs` limits retrieval to those document ids (None or empty: all)."""
        try:
            problem = question_problem(question, self.settings.answer.max_question_chars)
            if problem:
                yield _error("bad_input", problem)
                return
            run = _Run(self, question.strip(), list(history or []), label or question.strip(), list(docs or []))
            if direct_answer is not None:
                yield from run.direct(direct_answer, refused=False)
                return
            talk = run.small_talk()
            if talk is not None:
                yield from talk
                return
            retrieval = yield from run.retrieve()
            if retrieval is None:
                return
            gate = self.gate(retrieval, run)
            if gate.refuse:
                yield from run.refuse_before(gate)
                return
            ticket = ticket or self.queue.take(capped=False)
            if not (yield from run.wait_turn(ticket)):
                yield _error("timeout", f"Waited {QUEUE_TIMEOUT_S / 60:.0f} minutes for the reader; it is busy "
                                        "with other answers. Please ask again later.")
                return
            yield from run.write(gate)
        finally:
            if ticket is not None:
                self.queue.finish(ticket)

    def gate(self, retrieval: Retrieval, run: "_Run") -> refusal.Gate:
        """The refusal gate, and what it tells verification (weak retrieval, names the corpus lacks)."""
        t = time.perf_counter()
        g = self.refusal_gate(retrieval)
        run.trace.add("refusal_gate", _ms(t), [g.to_dict()])
        run.unknown_terms = list(g.unknown_terms)
        run.count = retrieval.list_count
        # weak retrieval (score under the unknown-term line, i.e. the median answerable score) gets verified
        run.weak_retrieval = (self.settings.verify.weak_retrieval and g.score is not None
                              and g.unknown_term_threshold is not None and g.score < g.unknown_term_threshold)
        run.trace.add("verify_policy", 0.0, [{"mode": run.verify_mode, "risk": run.risk.level,
                                              "weak_retrieval": run.weak_retrieval,
                                              "follow_up": run.follow_up_checked}])
        return g

    def refusal_gate(self, retrieval: Retrieval) -> refusal.Gate:
        """The gate's decision on a retrieval, as an answer would meet it (an evaluation counts them)."""
        return refusal.gate(retrieval, self.settings, self.models.optional("embedder"), self.vocabulary())

    def vocabulary(self) -> set[str]:
        """Every word of the current index, computed once per index (the gate's unknown-term rule)."""
        index = self.retriever().index
        if self._vocabulary is None or self._vocabulary[0] is not index:
            self._vocabulary = (index, refusal.vocabulary(index))
        return self._vocabulary[1]

    def documents(self) -> list:
        try:
            return documents(self.retriever().index)
        except IndexMissing:
            return []


class _Run:
    """State of one answer while it streams."""

    def __init__(self, pipeline: Pipeline, question: str, history: list[dict], shown: str, docs: list[str]):
        self.pipeline = pipeline
        self.settings = pipeline.settings
        self.opts = pipeline.settings.answer
        self.verify_mode = pipeline.settings.verify.mode
        self.question, self.history, self.shown = question, history, shown
        self.docs = docs  # the documents the person limited the search to ([] = all)
        self.start = time.perf_counter()
        self.trace = Trace()
        self.timings = {"retrieve": 0.0, "first_token": None, "generate": 0.0, "verify": 0.0, "retry": 0.0,
                        "total": 0.0}
        self.passages: list[Passage] = []
        self.risk: Risk = classify(question, self.settings)
        self.partial: list[str] = []
        self.weak_retrieval = False  # set from the refusal gate: the score is below the median answerable one
        self.unknown_terms: list[str] = []  # from the refusal gate: names in the question the corpus never mentions
        self.count: int | None = None  # from retrieval: "the four tiers" -> a list answer should have four
        self.queue_ms = 0.0  # waiting for earlier answers to finish with the reader
        self.searched_for = ""  # a follow-up's standalone question (retrieval.followup), shown as "Searched for"
        self.english = ""  # a question typed in another language, as translated for the search
        self.ask = ""  # what the reader is asked when not the question as typed (acting on the last answer, a comparison)
        self.rewrites = False  # a turn acting on the previous answer ("in one line"): its own wording is asked for
        self.rewritten = ""  # the answer such a turn rewrites
        self.reader_passages: list[Passage] = []  # what the reader is shown of `passages` (`prompt.without_said`)
        self.said = ""  # the previous answer, when sentences it said were left out of `reader_passages`
        self.premise = premise.PremiseCheck()  # what the question takes for granted, against the passages
        self.language = answer_language(question)  # '' for English

    @cached_property
    def previous(self):
        """The exchange before this turn (`followup.turns_of`), read from the history once: the
        passages shown to the reader and a brief rewrite both need its answer."""
        turns = turns_of(self.history, self.question)
        return turns[-1] if turns else None

    @cached_property
    def settling(self) -> tuple[int, str] | None:
        """The passage sentence the question turns on (`premise.settling`: its passage number and
        the sentence), found once, after retrieval: quoted in place of a bare "Yes" and under an
        answer in another language."""
        return premise.settling(self.english or self.question, self.passages, self.searched_for)

    @property
    def follow_up_checked(self) -> bool:
        """A follow-up answered from a new search is checked in full and retried when unsupported
        (`verify.follow_ups`): the reader answers follow-ups worse than first turns, with the
        evidence in its passages as often (docs/decisions.md, "Follow-ups checked in full"). A
        rewrite of the previous answer is not: it says again what was checked."""
        return (self.verify_mode != "never" and self.settings.verify.follow_ups and bool(self.searched_for)
                and not self.rewrites)

    @property
    def strict(self) -> bool:
        """Verification that may trigger a retry or a refusal: HIGH-risk questions, or mode 'always'.
        Checks run only because retrieval was weak mark sentences (a flag) but never refuse on a
        small judge's word alone: a question the gate let through is flagged, not refused."""
        return self.verify_mode == "always" or (self.verify_mode == "high" and self.risk.level == "HIGH")

    def backend(self) -> dict:
        try:
            return self.pipeline.models.active()
        except Exception:
            return {}

    def mark_first_token(self) -> None:
        if self.timings["first_token"] is None:
            self.timings["first_token"] = _ms(self.start)

    def final(self, text: str, *, refused: bool, refusal_reason: str = "", attempts: list[Attempt] = (),
              chosen: Attempt | None = None, retried: bool = False, gate: refusal.Gate | None = None,
              direct: bool = False, small_talk: str = "") -> Final:
        self.timings["total"] = _ms(self.start)
        if self.timings["first_token"] is None:
            self.timings["first_token"] = self.timings["total"]
        verdicts = chosen.verdicts if chosen else []
        marks = {} if refused else citations.checker_marks(text, self.passages, verdicts)
        checkable, by_reader, by_checker = citations.marked_share(text, len(self.passages), marks)
        return Final(Answer(
            question=self.question, text=text, refused=refused, refusal_reason=refusal_reason, risk=self.risk.level,
            risk_kinds=self.risk.kinds, verified=bool(chosen and chosen.verified), sentences=list(verdicts),
            flagged=any(not v.supported for v in verdicts), retried=retried,
            disclaimer="" if refused else " ".join(note for note, shown in (
                (CUT_NOTE, bool(chosen and chosen.cut)), (LIST_DISCLAIMER, self.risk.is_list)) if shown),
            sources=citations.source_list(self.passages, "" if refused else text, marks),
            marks={"sentences": checkable, "reader": by_reader, "checker": by_checker}, backend=self.backend(),
            timings_ms={k: (round(v, 1) if v is not None else None) for k, v in self.timings.items()},
            prompt_tokens=chosen.prompt_tokens if chosen else 0, queue_ms=round(self.queue_ms, 1),
            attempts=[a.to_dict() for a in attempts], label=self.shown, docs=self.docs,
            searched_for=self.searched_for, trace=self.trace.to_dict(),
            gate=gate.to_dict() if gate is not None else None, chosen_attempt=chosen.n if gate and chosen else None,
            direct=direct, small_talk=small_talk))

    # -- before the reader
    def direct(self, text: str, *, refused: bool, refusal_reason: str = "", small_talk: str = "") -> Iterator[Event]:
        """An answer that needs no passage and no reader: a topic's configured answer, or small talk."""
        yield Sources([])
        self.mark_first_token()
        yield Token(text, 1)
        yield self.final(text, refused=refused, refusal_reason=refusal_reason, direct=True, small_talk=small_talk)

    def small_talk(self) -> Iterator[Event] | None:
        """The events of a small-talk answer (engine/answer/smalltalk/), or None for a question to search.
        A classifier that cannot run (no embedder) lets every question through to retrieval, and so
        does a turn that goes on from an earlier one ("and sprockets??", retrieval/followup.goes_on),
        and a question the classifier took for one about the assistant that leans on the answer
        before it ("which documents does it recommend?", `leans_on_answer`)."""
        classifier = self.pipeline.small_talk()
        if classifier is None or self.history and goes_on(self.question):
            return None
        t = time.perf_counter()
        try:
            decision = classifier.classify(self.question)
        except BackendError as exc:
            self.trace.notes.append(f"small talk not checked: {exc.message}")
            return None
        if may_follow_up(decision, self.question) and self.leans_on_answer():
            decision = replace(decision, small_talk=False, why=f"nearest kind {decision.kind}, but it leans on the "
                               "answer before it: a question about that answer")
        self.trace.add("small_talk", _ms(t), [decision.to_dict()], decision.why)
        if not decision.small_talk:
            return None
        reader = self.backend().get("reader", "").split(":", 1)[-1]
        refused = is_refusal(decision.kind)
        self.risk = Risk("", [], False)
        return self.direct(reply(decision.kind, self.pipeline.documents(), reader), refused=refused,
                           refusal_reason="off_topic" if refused else "", small_talk=decision.kind)

    def leans_on_answer(self) -> bool:
        """Whether this turn follows up an answered turn, as retrieval will understand it
        (`Retriever.resolve`); False with no history or no index to resolve it with."""
        if not self.history:
            return False
        try:
            return self.pipeline.retriever().resolve(self.question, self.history).leans_on_answered
        except IndexMissing:
            return False

    def retrieve(self) -> Iterator[Event]:
        """Yields the `sources` event (or an error); returns the Retrieval, or None after an error."""
        self.trace.add("risk", 0.0, [self.risk.to_dict()])
        t = time.perf_counter()
        try:
            retrieval = self.pipeline.retriever().retrieve(self.question, k=self.opts.k, history=self.history,
                                                           docs=self.docs)
        except ValueError as exc:  # a document choice the index does not have
            yield _error("bad_input", str(exc))
            return None
        except BackendError as exc:
            yield _error(exc.kind, exc.message)
            return None
        except IndexMissing as exc:  # the message says what to run
            yield _error("index_missing", str(exc))
            return None
        self.timings["retrieve"] = _ms(t)
        self.trace.stages.extend(retrieval.trace.stages)
        self.trace.notes.extend(retrieval.trace.notes)
        self.passages = retrieval.passages
        self.english = retrieval.english
        if retrieval.followup is not None and retrieval.followup.resolved:
            self.searched_for, self.ask = retrieval.followup.question, retrieval.followup.ask
            self.rewrites, self.rewritten = bool(retrieval.followup.reuse), retrieval.followup.rewritten
        self.reader_passages = self.shown_to_reader(retrieval.followup)
        subject = retrieval.followup.subject if retrieval.followup is not None else ""
        self.premise = premise.traced(self.question, self.passages, self.trace, subject)
        yield Sources(self.passages, self.risk.level, self.searched_for or self.english)  # what was understood
        return retrieval

    def shown_to_reader(self, followup: Resolution | None) -> list[Passage]:
        """The passages as the reader reads them: for a follow-up that asks something new of the
        conversation (one leaning on the turn before, a correction), less the sentences the
        previous answer already said (`prompt.without_said`), which the trace counts. A rewrite
        of that answer, a drill-down into its list and a comparison keep them: they are what
        those turns are about."""
        if followup is None or followup.kind not in ("follow_up", "correction"):
            return self.passages
        last = self.previous
        if last is None or not last.answered:
            return self.passages
        shown, elided = without_said(self.passages, last.answer)
        if elided:
            self.said = last.answer
            self.trace.add("elide", 0.0, [{"sentences": elided}], "said by the previous answer: left out of the reader's passages")
        return shown

    def as_repeat(self, verdict: Verdict) -> Verdict:
        """An unsupported sentence the previous answer already said, marked as that repeat: the
        judge asked inside the prompt reads the passages without it, so "no passage supports this"
        would be untrue of a sentence a passage may well state; it is not this turn's answer."""
        if self.said and not verdict.supported and not verdict.reason and said_before(verdict.text, self.said):
            return replace(verdict, reason=REPEATED)
        return verdict

    def refuse_before(self, gate: refusal.Gate) -> Iterator[Event]:
        reason = gate.rule if gate.rule == refusal.NOTHING_TO_REWRITE else "off_topic"
        text = refusal.message(self.passages, reason, self.pipeline.retriever().index, self.language)
        self.mark_first_token()
        yield Token(text, 0)
        yield self.final(text, refused=True, refusal_reason=reason, gate=gate)

    def wait_turn(self, ticket: Ticket) -> Iterator[Event]:
        """`queue` events (answers ahead) while earlier answers hold the reader; returns False when
        the wait outlasted QUEUE_TIMEOUT_S."""
        queue = self.pipeline.queue
        t = time.perf_counter()
        shown = None
        while not queue.acquire(ticket, timeout=0 if shown is None else 1.0):  # the place is shown at once
            ahead = queue.ahead(ticket)
            if ahead != shown:
                shown = ahead
                yield Queue(ahead)
            if _ms(t) > QUEUE_TIMEOUT_S * 1000:
                return False
        if shown:
            yield Queue(0)
        self.queue_ms = _ms(t)
        self.trace.add("queue", self.queue_ms, note="waited for earlier answers" if shown else "")
        return True

    # -- at the reader
    def write(self, gate: refusal.Gate) -> Iterator[Event]:
        """Generation, verification, the citation-forced retry and the final event, for an answer
        whose turn at the reader has come."""
        try:
            reader = self.pipeline.models.reader()
        except BackendError as exc:
            yield _error(exc.kind, exc.message)
            return
        attempts: list[Attempt] = []
        try:
            first = yield from self.attempt(1, reader, retry=False)
        except _Stopped as stop:  # a partial answer is marked incomplete, never passed off as whole
            yield _error(stop.error.kind, stop.error.message, stop.partial)
            return
        attempts.append(first)
        self.timings["generate"] = first.generate_ms
        self.timings["verify"] = first.verify_ms
        second = yield from self.retry(first, reader, attempts)
        chosen = _choose(first, second)
        reason = ""
        if chosen.dont_know:
            reason = "reader_declined"
        elif self.strict and chosen.verified and chosen.own_verdicts and not any(v.supported for v in chosen.own_verdicts):
            reason = "unsupported"
        if reason:
            text = refusal.message(self.passages, reason, self.pipeline.retriever().index, self.language)
            yield self.final(text, refused=True, refusal_reason=reason, attempts=attempts, chosen=chosen,
                             retried=second is not None, gate=gate)
            return
        yield self.final(chosen.answer, refused=False, attempts=attempts, chosen=chosen, retried=second is not None,
                         gate=gate)

    def retry(self, first: Attempt, reader: Reader, attempts: list[Attempt]) -> Iterator[Event]:
        """The second attempt: asked for the items when the first only counted them, the sentence
        that settles a yes/no question quoted when the first only said "Yes" (or "Yes" where that
        sentence says no), the contradicted premise's lead alone when the first agreed with the
        premise or found no answer after it, else citation-forced when a checked first one has
        unsupported sentences; returns it (None when not needed or when it failed)."""
        flagged = {v.reason for v in first.verdicts}
        dodge = next((found for reason, found in _DODGES.items() if reason in flagged), None)
        if first.dont_know and self.premise.contradicted is not None:
            dodge = (DECLINED_RETRY, None)  # the correction the answer opened with is an answer of its own
        settles = None
        if dodge and dodge[0] == COPY_RETRY:
            return (yield from self.shortened())
        if dodge and dodge[1] is None:  # quoted, not asked again
            c = self.premise.contradicted  # an opening that agrees with it: the lead that quotes it stands alone
            settles = (c.passage, c.sentence) if dodge[0] in (PREMISE_RETRY, DECLINED_RETRY) else self.settling
            if settles is None:
                return None  # no sentence to quote: the flagged first attempt stands
        elif not dodge and not (first.verified and (self.strict or self.follow_up_checked)
                                and should_retry(first.own_verdicts)):
            return None
        passed, failed = support_counts(first.verdicts)
        reason = dodge[0] if dodge else f"{failed} of {passed + failed} sentences were not supported by the passages"
        yield Retry(reason, 2)
        t = time.perf_counter()
        second = None
        try:
            second = (yield from self.quoted(2, *settles)) if settles else \
                (yield from self.attempt(2, reader, retry=True, instruction=dodge[1] if dodge else RETRY_INSTRUCTION))
            attempts.append(second)
        except _Stopped as stop:
            self.trace.notes.append(f"retry failed ({stop.error.line}); "
                                    "keeping the first attempt")
        self.timings["retry"] = _ms(t)
        if second:
            self.timings["verify"] += second.verify_ms
        self.trace.add("retry", self.timings["retry"], [{"reason": reason}])
        return second


    # -- one generation + its checks
    def attempt(self, n: int, reader, *, retry: bool, instruction: str = RETRY_INSTRUCTION) -> Iterator[Event]:
        """Yields token and verdict events; returns the Attempt, or raises _Stopped if the reader fails."""
        att = Attempt(n)
        # a rewrite's ask carries the answer it rewrites: the conversation window would only repeat
        # it, and its passages drew the reader away from it (asked for a table of a list, it
        # tabulated a table of the passages); its [n] marks still name them, as the page and the
        # checker read them. A retry, told to find exact sentences, is shown them.
        rewriting = self.rewrites and bool(self.ask)
        shown = [] if rewriting and not retry else self.reader_passages
        att.numbered = bool(shown)
        messages = att.messages = build_messages(self.ask or self.question, shown,
                                                 None if rewriting else self.history,
                                                 retry=retry, history_chars=self.opts.history_chars,
                                                 typed=self.question, instruction=instruction,
                                                 cites_passages=rewriting)
        att.prompt_tokens = _prompt_tokens(reader, messages)
        kind = ("list-forced" if instruction == LIST_INSTRUCTION else "citation-forced") if retry else ""
        self.trace.add(f"prompt#{n}", 0.0, [{"tokens": att.prompt_tokens, "passages": len(self.passages),
                                             "retry": retry}], kind)
        lead = self.premise.lead  # a contradicted premise: the correction opens the answer
        self.partial = [lead] if lead else []
        pace = self.pipeline.models.pace
        sharing = self.pipeline.queue.snapshot()["serving"]  # with N slots, N prompts are read at once
        limit = pace.first_token_limit(att.prompt_tokens, sharing)
        expected = pace.expected_s(att.prompt_tokens, sharing)
        yield Prefill(att.prompt_tokens, n, round(limit, 1), round(expected, 1) if expected else None)
        t = time.perf_counter()
        if lead:
            self.mark_first_token()
            yield Token(lead, n)
        sent = Sent()
        try:
            for piece in stream_answer(reader, messages, max_tokens=self.opts.max_tokens,
                                       temperature=self.opts.temperature, first_token_s=limit, sent=sent):
                if len(self.partial) == bool(lead):
                    att.prefill_ms = _ms(t)
                    pace.observe(att.prompt_tokens, att.prefill_ms / 1000, sharing)
                self.mark_first_token()
                self.partial.append(piece)
                yield Token(piece, n)
        except BackendError as exc:
            raise _Stopped(exc, "".join(self.partial)) from exc
        att.generate_ms = _ms(t)
        att.text = without_scaffolding("".join(self.partial), self.reader_passages)
        reached = sent.reached(self.opts.max_tokens, getattr(reader, "count_tokens", None))
        if reached:  # the page showed it stop mid-word
            kept = without_unfinished(att.text)
            att.text, att.cut = kept, kept != att.text
        self.trace.add(f"generate#{n}", att.generate_ms,
                       note=f"{len(att.text)} characters" + (", at the length limit" if reached else ""))
        written = premise.reader_part(att.text, self.premise)
        att.dont_know = says_dont_know(written) or restates_question(written, self.question)
        if not att.dont_know and not rewriting:
            yield from self.name_rest(att, written)
        source = self.source() if not att.dont_know else ""
        if source:
            att.text += "\n\n" + source
            yield Token("\n\n" + source, n)
        yield from self.check(att)
        return att

    def name_rest(self, att: Attempt, written: str) -> Iterator[Event]:
        """The rest of a list the answer drew from, named under it where the reader was shown only
        part of that list (`complete.list_rest`: the context budget's trimming left items out; not
        the sentences a follow-up's copy leaves out because the previous answer said them)."""
        parents = self.pipeline.retriever().index.parents
        whole = [parents[p.id].text if p.id in parents else p.text for p in self.passages]
        asked = " ".join(dict.fromkeys(q for q in (self.question, self.english, self.ask) if q))
        n, names = list_rest(written, [p.text for p in self.passages], whole, asked,
                             selection="selection" in self.risk.kinds, count=self.count)
        if not n:
            return
        lines = rest_lines(n, names, self.language)
        att.named = [Verdict(line, True, n, REST_REASON.format(n=n)) for line in lines[1:]]
        att.text += "\n\n" + "\n".join(lines)
        self.trace.add(f"listed#{att.n}", 0.0, [{"passage": n, "items": names}],
                       "the rest of a list the reader was shown only part of")
        yield Token("\n\n" + "\n".join(lines), att.n)

    def source(self) -> str:
        """The English sentence an answer in another language rests on, quoted under it ('' for an
        English answer, or when no passage sentence shares enough of the question's words): the
        small reader's translation drifts, and only English can be checked against the passages."""
        if not self.language or self.settling is None:
            return ""
        return source_line(self.language, *self.settling)

    def quoted(self, n: int, number: int, sentence: str) -> Iterator[Event]:
        """The retry of an answer that only said "Yes", asked the question back, or agreed with a
        contradicted premise: the passage sentence the question turns on (`premise.settling`:
        passage `number`; the contradicting one), quoted and cited after a contradicted premise's
        lead (the lead alone when it quotes that sentence), with no reader call: asked again to
        quote it, the 1.5B reader said "Yes" again (docs/decisions.md). Under a question in another
        language it is worded as that language's source line."""
        lead = self.premise.lead
        quote = premise.quote(sentence)
        said = source_line(self.language, number, sentence) if self.language else f'The sources say: "{quote}" [{number}]'
        att = Attempt(n, text=lead.strip() if quote in lead else f"{lead}{said}")
        self.trace.add(f"quote#{n}", 0.0, [{"passage": number, "sentence": sentence}], "quote-forced")
        yield Token(att.text, n)
        yield from self.check(att)
        return att

    @cached_property
    def shortening(self) -> str:
        """The answer this turn rewrites, less its source line, when it asks for it shorter ('' otherwise)."""
        if not self.rewrites or not asks_brief(self.english or self.question):
            return ""
        return without_source_line(self.rewritten).strip()

    def shortened(self) -> Iterator[Event]:
        """The retry of a brief rewrite that came back as it was: the answer's first sentence that
        says something of its own (a lead-in ending in ":" does not), with no reader call; asked
        again, the reader copies again. None for a list (its first line is no summary of it) or an
        answer with no such sentence: the copy stands."""
        sentence = next((s.strip() for s in split_sentences(self.shortening) if not s.strip().endswith(":")), "")
        if not sentence or len(answer_items(self.shortening)) >= 2:
            return None
        yield Retry(COPY_RETRY, 2)
        source = self.source()
        att = Attempt(2, text=sentence + (f"\n\n{source}" if source else ""))
        self.trace.add("shorten#2", 0.0, [{"sentence": sentence}], "the first sentence of the answer to shorten")
        yield Token(att.text, 2)
        yield from self.check(att)
        self.trace.add("retry", 0.0, [{"reason": COPY_RETRY}])
        return att

    def judge_in_prompt(self, verifier, att: Attempt) -> Callable[[int, str], bool] | None:
        """The check asked inside the attempt's own prompt, where the verifier is the reader and
        `verify.context` says so ("auto": where the reader was measured to judge well there), and
        that prompt numbers the passages (a quote written without the reader, a rewrite, do not);
        None sends each passage alone."""
        context = self.settings.verify.context
        if not att.numbered or not isinstance(verifier, AnswerJudge) or context == "passage" or (
                context == "auto" and not verifier.judges_in_prompt):
            return None
        return lambda number, claim: verifier.check_in_prompt(att.messages, number, claim)

    def check(self, att: Attempt) -> Iterator[Event]:
        """Verify the draft (all sentences when the mode says so, else only those with bad citations),
        then repair citations with what verification found."""
        mode, n_passages = self.verify_mode, len(self.passages)
        wanted = mode == "always" or self.follow_up_checked or (
            mode == "high" and (self.risk.level == "HIGH" or self.weak_retrieval))
        full = not att.dont_know and wanted
        named = {v.text for v in att.named}  # supported by construction: no check
        sentences = [s for s in split_sentences(att.text) if s not in named]
        targets = sentences if full else [s for s in citations.sentences_with_invalid(att.text, n_passages)
                                          if s not in named]
        t = time.perf_counter()
        note = ""
        if not full and not att.dont_know:  # numbers and names no passage states: flagged, no model call
            for v in ungrounded_verdicts([s for s in sentences if s not in targets], self.passages, self.question,
                                         self.unknown_terms):
                att.verdicts.append(v)
                yield Checked(v, att.n)
        if targets and not att.dont_know:
            try:
                verifier = self.pipeline.models.verifier()
                for v in verify_sentences(targets, self.passages, verifier.check,
                                          self.settings.verify,
                                          question=self.question if full else "",
                                          unknown_terms=self.unknown_terms,
                                          check_at=self.judge_in_prompt(verifier, att)):
                    v = self.as_repeat(v)
                    att.verdicts.append(v)
                    yield Checked(v, att.n)
                att.verified = full
            except BackendError as exc:  # an answer stays usable without marks; say why it has none
                note = f"verification unavailable: {exc.message}"
                self.trace.notes.append(note)
                att.verified = False
        for v in att.named:  # the passage's own item names, found there by `complete.list_rest`
            att.verdicts.append(v)
            yield Checked(v, att.n)
        # a list named to its end from its passage has that list's length, however the reader began it
        mismatch = None if att.dont_know or att.named else count_mismatch(att.text, self.count)
        if mismatch is not None:
            att.verdicts.append(mismatch)
            yield Checked(mismatch, att.n)
        written = premise.reader_part(att.text, self.premise)
        counted = None if att.dont_know or self.rewrites else counted_not_listed(written, self.ask or self.question,
                                                                                 answer_items(written))
        bare = None if att.dont_know or self.rewrites else bare_polarity(
            written, self.ask or self.question, " ".join(f"{p.doc} {p.title}" for p in self.passages))
        denied = None if att.dont_know or self.rewrites or bare or self.settling is None else yes_against_no(
            written, self.ask or self.question, self.settling[1])
        copied = copied_back(without_source_line(written), self.shortening) if self.shortening else None
        asked = None if att.dont_know or self.rewrites else asked_back(without_source_line(written), self.passages)
        # flagged beside the sentence's own verdict, as a list of the wrong length is
        for dodged in (counted, bare, denied, copied, asked):
            if dodged is not None:
                att.verdicts.append(dodged)
                yield Checked(dodged, att.n)
        agrees = None if att.dont_know else premise.opening_verdict(att.text, self.premise)
        if agrees is not None:  # it replaces the sentence's own verdict: agreeing is what is wrong with it
            att.verdicts = [v for v in att.verdicts if v.text != agrees.text] + [agrees]
            yield Checked(agrees, att.n)
        att.verify_ms = _ms(t)
        passed, failed = support_counts(att.verdicts)
        self.trace.add(f"verify#{att.n}", att.verify_ms, [verdict_dict(v) for v in att.verdicts],
                       note or f"mode={mode}, {'all sentences' if full else 'bad citations only'}: "
                               f"{passed} supported, {failed} not")
        att.repair = citations.repair(att.text, n_passages, att.verdicts)
        if att.repair.changed:
            self.trace.add(f"citations#{att.n}", 0.0, [{"dropped": att.repair.dropped,
                                                        "mapped": att.repair.mapped}],
                           "out-of-range citations repaired")


def _choose(first: Attempt, second: Attempt | None) -> Attempt:
    """Keep the better-supported attempt; a tie keeps the first (the retry had to earn its place)."""
    if second is None:
        return first

    def key(a: Attempt):  # an answer that only counted a list, or only said yes, loses to one that does not
        return (not a.dont_know, not any(v.reason in _DODGES for v in a.verdicts), support_score(a.own_verdicts))

    return second if key(second) > key(first) else first

"""answer(): question -> stream of Events (the contract in shared/DESIGN.md).

sources → token… → verdict… → [retry → token… → verdict…] → final, or error at any point.
Stages: validate, risk, retrieve, refusal gate, prompt, generate, verify, retry, citations,
refusal after generation. Each lands in the trace with its timing, so a person can see why an
answer looks as it does. Plain Python: the web layer and the CLI both consume this generator.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Iterator

from ..verification import citations
from . import refusal
from ..errors import BackendError, IndexMissing
from .generate import stream_answer
from .prompt import build_messages, fit_passages
from ..backends.queue import ReaderQueue, Ticket
from .risk import Risk, classify
from ..text import count_tokens, split_sentences
from ..types import Event, Passage, Trace, Verdict
from ..verification.verify import (count_mismatch, restates_question, says_dont_know, should_retry,
                     support_counts, support_score, ungrounded_verdicts, verify_sentences)

log = logging.getLogger(__name__)

LIST_DISCLAIMER = "This list may be incomplete — check the source document."
QUEUE_TIMEOUT_S = 900.0  # the longest an answer waits for its turn at the reader


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

    @property
    def answer(self) -> str:
        return self.repair.text if self.repair else self.text

    def to_dict(self) -> dict:
        passed, failed = support_counts(self.verdicts)
        return {"attempt": self.n, "text": self.text, "answer": self.answer, "verified": self.verified,
                "dont_know": self.dont_know, "supported": passed, "unsupported": failed,
                "sentences": [_verdict(v) for v in self.verdicts], "prompt_tokens": self.prompt_tokens,
                "generate_ms": round(self.generate_ms, 1), "prefill_ms": round(self.prefill_ms, 1), "verify_ms": round(self.verify_ms, 1),
                "citations_dropped": self.repair.dropped if self.repair else [],
                "citations_mapped": self.repair.mapped if self.repair else []}


class _Stopped(Exception):
    """Generation failed part-way; carries the backend error and the text streamed so far."""

    def __init__(self, error: BackendError, partial: str):
        super().__init__(error.message)
        self.error, self.partial = error, partial


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


def _verdict(v: Verdict) -> dict:
    out = {"text": v.text, "supported": v.supported, "passage": v.passage}
    if v.reason:
        out["reason"] = v.reason
    return out


def _error(kind: str, message: str, partial: str = "") -> Event:
    return Event("error", {"kind": kind, "message": message, "partial": partial,
                           "incomplete": bool(partial)})


def validate(question, settings) -> str:
    """Why the question cannot be answered as given ('' when it can); checked before any model call."""
    if not isinstance(question, str) or not question.strip():
        return "Please type a question."
    limit = settings.answer.max_question_chars
    if len(question) > limit:
        return f"The question is too long ({len(question):,} characters; the limit is {limit:,})."
    return ""


def _prompt_tokens(reader, messages: list[dict]) -> int:
    text = "\n".join(m["content"] for m in messages)
    counter = getattr(reader, "count_tokens", None)
    try:
        return (counter(text) if counter else count_tokens(text)) + 6 * len(messages)  # + chat template
    except Exception:  # counting is informational; never fail an answer over it
        return count_tokens(text)


class _Run:
    """State of one answer while it streams."""

    def __init__(self, runtime, question: str, history: list[dict], shown: str):
        self.runtime = runtime
        self.settings = runtime.settings
        self.opts = runtime.settings.answer
        self.verify_mode = runtime.settings.verify.mode
        self.question, self.history, self.shown = question, history, shown
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
        self.docs: list[str] = []  # the documents the person limited the search to ([] = all)

    @property
    def strict(self) -> bool:
        """Verification that may trigger a retry or a refusal: HIGH-risk questions, or mode 'always'.
        Checks run only because retrieval was weak mark sentences (a flag) but never refuse on a
        small judge's word alone: a question the gate let through is flagged, not refused."""
        return self.verify_mode == "always" or (self.verify_mode == "high" and self.risk.level == "HIGH")

    def backend(self) -> dict:
        try:
            return self.runtime.models.active()
        except Exception:
            return {}

    def mark_first_token(self) -> None:
        if self.timings["first_token"] is None:
            self.timings["first_token"] = _ms(self.start)

    def final(self, answer: str, *, refused: bool, refusal_reason: str = "", attempts: list[Attempt] = (),
              chosen: Attempt | None = None, retried: bool = False, extra: dict | None = None) -> Event:
        self.timings["total"] = _ms(self.start)
        if self.timings["first_token"] is None:
            self.timings["first_token"] = self.timings["total"]
        verified = bool(chosen and chosen.verified)
        marks = {} if refused else citations.checker_marks(answer, self.passages, chosen.verdicts if chosen else [])
        checkable, by_reader, by_checker = citations.marked_share(answer, len(self.passages), marks)
        data = {
            "answer": answer, "refused": refused, "refusal_reason": refusal_reason, "risk": self.risk.level,
            "risk_kinds": self.risk.kinds, "verified": verified,
            "sentences": [_verdict(v) for v in (chosen.verdicts if chosen else [])],
            "flagged": bool(chosen and any(not v.supported for v in chosen.verdicts)),
            "retried": retried, "disclaimer": LIST_DISCLAIMER if self.risk.is_list and not refused else "",
            "sources": citations.source_list(self.passages, "" if refused else answer, marks),
            "marks": {"sentences": checkable, "reader": by_reader, "checker": by_checker},
            "backend": self.backend(),
            "timings_ms": {k: round(v, 1) for k, v in self.timings.items()},
            "prompt_tokens": chosen.prompt_tokens if chosen else 0,
            "queue_ms": round(self.queue_ms, 1),
            "attempts": [a.to_dict() for a in attempts],
            "question": self.question, "label": self.shown, "docs": self.docs,
            "trace": self.trace.to_dict(),
        }
        data.update(extra or {})
        return Event("final", data)

    # -- one generation + its checks
    def attempt(self, n: int, reader, *, retry: bool) -> Iterator[Event]:
        """Yields token and verdict events; returns the Attempt, or raises _Stopped if the reader fails."""
        att = Attempt(n)
        messages = build_messages(self.question, self.passages, self.history, retry=retry,
                                  history_chars=self.opts.history_chars)
        att.prompt_tokens = _prompt_tokens(reader, messages)
        self.trace.add(f"prompt#{n}", 0.0, [{"tokens": att.prompt_tokens, "passages": len(self.passages),
                                             "retry": retry}], "citation-forced" if retry else "")
        self.partial = []
        pace = self.runtime.models.pace
        sharing = self.runtime.queue.snapshot()["serving"]  # with N slots, N prompts are read at once
        limit = pace.first_token_limit(att.prompt_tokens, sharing)
        expected = pace.expected_s(att.prompt_tokens, sharing)
        yield Event("prefill", {"prompt_tokens": att.prompt_tokens, "attempt": n, "limit_s": round(limit, 1),
                                "expected_s": round(expected, 1) if expected else None})
        t = time.perf_counter()
        try:
            for piece in stream_answer(reader, messages, max_tokens=self.opts.max_tokens,
                                       temperature=self.opts.temperature, first_token_s=limit):
                if not self.partial:
                    att.prefill_ms = _ms(t)
                    pace.observe(att.prompt_tokens, att.prefill_ms / 1000, sharing)
                self.mark_first_token()
                self.partial.append(piece)
                yield Event("token", {"text": piece, "attempt": n})
        except BackendError as exc:
            raise _Stopped(exc, "".join(self.partial)) from exc
        att.generate_ms = _ms(t)
        att.text = "".join(self.partial).strip()
        self.trace.add(f"generate#{n}", att.generate_ms, note=f"{len(att.text)} characters")
        att.dont_know = says_dont_know(att.text) or restates_question(att.text, self.question)
        yield from self.check(att)
        return att

    def check(self, att: Attempt) -> Iterator[Event]:
        """Verify the draft (all sentences when the mode says so, else only those with bad citations),
        then repair citations with what verification found."""
        mode, n_passages = self.verify_mode, len(self.passages)
        wanted = mode == "always" or (mode == "high" and (self.risk.level == "HIGH" or self.weak_retrieval))
        full = not att.dont_know and wanted
        sentences = split_sentences(att.text)
        targets = sentences if full else citations.sentences_with_invalid(att.text, n_passages)
        t = time.perf_counter()
        note = ""
        if not full and not att.dont_know:  # numbers and names no passage states: flagged, no model call
            for v in ungrounded_verdicts([s for s in sentences if s not in targets], self.passages, self.question,
                                         self.unknown_terms):
                att.verdicts.append(v)
                yield Event("verdict", {**_verdict(v), "attempt": att.n})
        if targets and not att.dont_know:
            try:
                verifier = self.runtime.models.get("verifier")
                for v in verify_sentences(targets, self.passages, verifier.check,
                                          self.settings.verify,
                                          question=self.question if full else "",
                                          unknown_terms=self.unknown_terms):
                    att.verdicts.append(v)
                    yield Event("verdict", {**_verdict(v), "attempt": att.n})
                att.verified = full
            except BackendError as exc:  # an answer stays usable without marks; say why it has none
                note = f"verification unavailable: {exc.message}"
                self.trace.notes.append(note)
                att.verified = False
        mismatch = None if att.dont_know else count_mismatch(att.text, self.count)
        if mismatch is not None:
            att.verdicts.append(mismatch)
            yield Event("verdict", {**_verdict(mismatch), "attempt": att.n})
        att.verify_ms = _ms(t)
        passed, failed = support_counts(att.verdicts)
        self.trace.add(f"verify#{att.n}", att.verify_ms, [_verdict(v) for v in att.verdicts],
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

    def key(a: Attempt):
        return (support_score(a.verdicts), not a.dont_know)

    return second if key(second) > key(first) else first


def _direct(run: _Run, text: str, *, refused: bool, extra: dict, refusal_reason: str = "") -> Iterator[Event]:
    """An answer that needs no passage and no reader: a topic's configured answer, or small talk."""
    yield Event("sources", {"passages": []})
    run.mark_first_token()
    yield Event("token", {"text": text, "attempt": 1})
    yield run.final(text, refused=refused, refusal_reason=refusal_reason, extra=extra)


def _small_talk(runtime, question: str, run: _Run) -> Iterator[Event] | None:
    """The events of a small-talk answer (engine/answer/smalltalk/), or None for a question to search.
    A classifier that cannot run (no embedder) lets every question through to retrieval."""
    classifier = runtime.small_talk
    if classifier is None:
        return None
    t = time.perf_counter()
    try:
        decision = classifier.classify(question)
    except BackendError as exc:
        run.trace.notes.append(f"small talk not checked: {exc.message}")
        return None
    run.trace.add("small_talk", _ms(t), [decision.to_dict()], decision.why)
    if not decision.small_talk:
        return None
    from .smalltalk import is_refusal, reply

    try:
        documents = runtime.documents()
    except IndexMissing:
        documents = []
    reader = runtime.models.active().get("reader", "").split(":", 1)[-1]
    refused = is_refusal(decision.kind)
    run.risk = Risk("", [], False)
    return _direct(run, reply(decision.kind, documents, reader), refused=refused,
                   refusal_reason="off_topic" if refused else "",
                   extra={"direct": True, "small_talk": decision.kind})


def _wait_turn(queue: ReaderQueue, ticket: Ticket, run: _Run) -> Iterator[Event]:
    """`queue` events (answers ahead) while earlier answers hold the reader; returns False when
    the wait outlasted QUEUE_TIMEOUT_S."""
    t = time.perf_counter()
    shown = None
    while not queue.acquire(ticket, timeout=0 if shown is None else 1.0):  # the place is shown at once
        ahead = queue.ahead(ticket)
        if ahead != shown:
            shown = ahead
            yield Event("queue", {"ahead": ahead})
        if _ms(t) > QUEUE_TIMEOUT_S * 1000:
            return False
    if shown:
        yield Event("queue", {"ahead": 0})
    run.queue_ms = _ms(t)
    run.trace.add("queue", run.queue_ms, note="waited for earlier answers" if shown else "")
    return True


def answer(runtime, question: str, history: list[dict] | None = None, *, label: str | None = None,
           direct_answer: str | None = None, ticket: Ticket | None = None,
           docs: list[str] | None = None) -> Iterator[Event]:
    """Stream one answer as Events. `label` is what the user saw (topic buttons); `direct_answer`
    is a configured fixed answer that bypasses retrieval and the reader entirely. `ticket` is the
    answer's place in the reader queue; the reader is used only once it is this ticket's turn.
    `docs` limits retrieval to those document ids (None or empty: all documents)."""
    problem = validate(question, runtime.settings)
    if problem:
        yield _error("bad_input", problem)
        return
    question = question.strip()
    run = _Run(runtime, question, list(history or []), label or question)
    run.docs = list(docs or [])
    if direct_answer is not None:
        yield from _direct(run, direct_answer, refused=False, extra={"direct": True})
        return
    talk = _small_talk(runtime, question, run)
    if talk is not None:
        yield from talk
        return
    run.trace.add("risk", 0.0, [run.risk.to_dict()])

    # retrieve
    t = time.perf_counter()
    try:
        retrieval = runtime.retrieve(question, k=run.opts.k, history=run.history, docs=run.docs)
    except ValueError as exc:  # a document choice the index does not have
        yield _error("bad_input", str(exc))
        return
    except BackendError as exc:
        yield _error(exc.kind, exc.message)
        return
    except IndexMissing as exc:  # the message says what to run
        yield _error("model_missing", str(exc))
        return
    run.timings["retrieve"] = _ms(t)
    run.trace.stages.extend(retrieval.trace.stages)
    run.trace.notes.extend(retrieval.trace.notes)
    run.passages = fit_passages(retrieval.passages, run.opts.context_tokens)
    yield Event("sources", {"passages": [dict(p.to_dict(), n=i) for i, p in enumerate(run.passages, 1)],
                            "risk": run.risk.level})

    # refuse before generation when retrieval is off-topic
    t = time.perf_counter()
    g = refusal.gate(retrieval, runtime.settings, runtime.models.optional("embedder"),
                     refusal.vocabulary(runtime.index))
    run.trace.add("refusal_gate", _ms(t), [g.to_dict()])
    run.unknown_terms = list(g.unknown_terms)
    run.count = retrieval.list_count
    # weak retrieval (score under the unknown-term line, i.e. the median answerable score) gets verified
    run.weak_retrieval = (run.settings.verify.weak_retrieval and g.score is not None
                          and g.unknown_term_threshold is not None and g.score < g.unknown_term_threshold)
    run.trace.add("verify_policy", 0.0, [{"mode": run.verify_mode, "risk": run.risk.level,
                                          "weak_retrieval": run.weak_retrieval}])
    if g.refuse:
        text = refusal.message(run.passages, "the question looks outside what they cover", runtime.index)
        run.mark_first_token()
        yield Event("token", {"text": text, "attempt": 0})
        yield run.final(text, refused=True, refusal_reason="off_topic", extra={"gate": g.to_dict()})
        return

    ticket = ticket or runtime.queue.take(capped=False)
    try:
        if not (yield from _wait_turn(runtime.queue, ticket, run)):
            yield _error("timeout", f"Waited {QUEUE_TIMEOUT_S / 60:.0f} minutes for the reader; it is busy "
                                    "with other answers. Please ask again later.")
            return
        yield from _write(run, runtime, g)
    finally:
        runtime.queue.finish(ticket)


def _write(run: _Run, runtime, g) -> Iterator[Event]:
    """Generation, verification, the citation-forced retry and the final event, for an answer
    whose turn at the reader has come."""
    try:
        reader = runtime.models.get("reader")
    except BackendError as exc:
        yield _error(exc.kind, exc.message)
        return

    attempts: list[Attempt] = []
    try:
        first = yield from run.attempt(1, reader, retry=False)
    except _Stopped as stop:  # a partial answer is marked incomplete, never passed off as whole
        yield _error(stop.error.kind, stop.error.message, stop.partial)
        return
    attempts.append(first)
    run.timings["generate"] = first.generate_ms
    run.timings["verify"] = first.verify_ms

    second = None
    if first.verified and run.strict and should_retry(first.verdicts):
        passed, failed = support_counts(first.verdicts)
        reason = f"{failed} of {passed + failed} sentences were not supported by the passages"
        yield Event("retry", {"reason": reason, "attempt": 2})
        t = time.perf_counter()
        try:
            second = yield from run.attempt(2, reader, retry=True)
            attempts.append(second)
        except _Stopped as stop:
            run.trace.notes.append(f"retry failed ({stop.error.kind}: {stop.error.message}); "
                                   "keeping the first attempt")
        run.timings["retry"] = _ms(t)
        if second:
            run.timings["verify"] += second.verify_ms
        run.trace.add("retry", run.timings["retry"], [{"reason": reason}])

    chosen = _choose(first, second)
    reason = ""
    if chosen.dont_know:
        reason = "reader_declined"
    elif run.strict and chosen.verified and chosen.verdicts and not any(v.supported for v in chosen.verdicts):
        reason = "unsupported"
    if reason:
        why = ("the passages found do not answer it" if reason == "reader_declined"
               else "nothing in the drafted answer could be checked against the passages")
        text = refusal.message(run.passages, why, runtime.index)
        yield run.final(text, refused=True, refusal_reason=reason, attempts=attempts, chosen=chosen,
                        retried=second is not None, extra={"gate": g.to_dict(), "chosen_attempt": chosen.n})
        return
    yield run.final(chosen.answer, refused=False, attempts=attempts, chosen=chosen, retried=second is not None,
                    extra={"gate": g.to_dict(), "chosen_attempt": chosen.n})

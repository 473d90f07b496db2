"""Answers on conversations: every turn answered by the real pipeline, with the real earlier answers
as the history, scored like the single-question answer runs (evidence in the reader's passages,
share of key terms in the answer, refusals).

`conversations.run_conversations` measures retrieval alone, with each earlier turn's *expected*
answer standing in for the real one; this run is the chat as a person gets it: a follow-up leans on
what the reader actually said and the passages it was actually given, so an early miss carries
over. It costs a reader call per turn (minutes per conversation on a CPU): `limit` takes the first
conversations of each set.
"""
from __future__ import annotations

import time
from typing import Callable

from ..answer.events import Error, Final, Sources
from ..backends.queue import EVAL
from ..runtime import Runtime
from ..types import Trace
from .answers import fallback_terms, term_present
from .conversations import Conversation, ConversationReport, TurnResult, stored, translation_of
from .retrieval import missing_evidence


def key_term_share(terms: list[str], answer: str, typed: list[str] | None = None) -> float:
    """The share of `terms` in the answer; an answer in the question's language (not English) may
    hold a term in that language instead (`typed`: the same terms in the same order, each with
    its forms split by "|")."""
    forms = [(t, *f.split("|")) for t, f in zip(terms, typed)] if typed and len(typed) == len(terms) \
        else [(t,) for t in terms]
    return round(sum(any(term_present(f, answer) for f in form) for form in forms) / len(terms), 4) if terms else 0.0


def run_conversation_answers(runtime: Runtime, conversations: list[Conversation], *, k: int = 6,
                             on_turn: Callable[[TurnResult], None] | None = None) -> ConversationReport:
    """Each turn through `runtime.answer` with the history the chat store passes (engine_history's
    shape: the question, the answer text, the passages shown, whether it was refused). A turn the
    reader failed keeps what it wrote before, as the chat does, and says why (`error`). Each
    answer takes an EVAL ticket: a person's question goes first."""
    report = ConversationReport(k=k)
    for conv in conversations:
        history: list[dict] = []
        for index, turn in enumerate(conv.turns):
            t = time.perf_counter()
            passages, answer, refused, searched, reason, translation, error = [], "", False, "", "", "", ""
            for event in runtime.answer(turn.question, list(history), ticket=runtime.queue.take("eval", capped=False, priority=EVAL)):
                if isinstance(event, Sources):
                    passages = [{**p.to_dict(), "n": i, "cited": False} for i, p in enumerate(event.passages, 1)]
                elif isinstance(event, Final):
                    answer, refused = event.answer.text, event.answer.refused
                    searched, reason = event.answer.searched_for, event.answer.refusal_reason
                    translation = translation_of(Trace.from_dict(event.answer.trace))
                    passages = [s.to_dict() for s in event.answer.sources] or passages
                elif isinstance(event, Error):  # kept as the chat keeps it: what was written, marked
                    answer, error = event.failure.partial, event.failure.line
            history += [{"role": "user", "content": turn.question},
                        {"role": "assistant", "content": answer, "sources": passages, "refused": refused}]
            if not turn.evidence:
                continue
            missing = missing_evidence(turn.evidence, [p.get("text", "") for p in passages])
            terms, typed = (turn.key_terms, turn.key_terms_typed) if turn.key_terms \
                else (fallback_terms(turn.answer), [])
            row = TurnResult(conv.id, index, turn.kind, turn.question, not missing, missing, searched,
                             stored(passages), round((time.perf_counter() - t) * 1000, 1), turn, refused,
                             refusal=reason, answer=answer,
                             key_terms=key_term_share(terms, answer, typed), translation=translation,
                             error=error)
            report.turns.append(row)
            if on_turn:
                on_turn(row)
    return report

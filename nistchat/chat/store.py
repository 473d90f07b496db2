"""Conversation and message persistence for the chat: short transactions, one final write per
answer (a partial one, marked incomplete, when the answer fails)."""
from __future__ import annotations

from dataclasses import dataclass, field

from flask import abort, session

from ..auth import is_admin, owner_id
from ..engine import Answer, Failure
from ..engine.types import verdict_dict
from ..extensions import db
from ..models import Conversation, Message, Timing, is_new_id, utcnow
from ..topics.questions import Topic

HISTORY_TURNS = 6  # the engine trims to ~1,000 characters itself; this only bounds the query


def visible_conversation(conv_id: str | None) -> Conversation | None:
    """The conversation if this browser (or an admin) may see it; 404 for anyone else's."""
    if not conv_id:
        return None
    conv = db.session.get(Conversation, conv_id) if is_new_id(conv_id) else None
    if conv is None or (conv.owner != owner_id() and not is_admin()):
        abort(404)
    return conv


def current_conversation() -> Conversation | None:
    """The conversation this browser's next question continues: always one of its own."""
    conv_id = session.get("conversation")
    if not conv_id:
        return None
    conv = db.session.get(Conversation, conv_id)
    if conv is None or conv.owner != owner_id():
        session.pop("conversation", None)
        return None
    return conv


def start_message(question: str, topic: Topic | None, conversation: Conversation | None = None,
                  docs: list[str] | None = None) -> Message:
    """Record the question at once (status pending) in the given or this browser's current
    conversation (a new one when there is none). Someone else's conversation is never continued:
    an admin reading a user's conversation asks in a new one of their own."""
    conv = conversation or current_conversation()
    if conv is not None and conv.owner != owner_id():
        conv = None
    if conv is None:
        conv = Conversation(owner=owner_id(), title=(topic.label if topic else question)[:200])
        db.session.add(conv)
        db.session.flush()
        session["conversation"] = conv.id
    conv.updated_at = utcnow()
    message = Message(conversation_id=conv.id, owner=owner_id(), question=question,
                      label=topic.label if topic and topic.mode != "plain" else None,
                      prompt=(topic.prompt if topic and topic.mode == "prompt" else question),
                      direct_answer=topic.answer if topic and topic.mode == "answer" else None,
                      docs=list(docs) if docs else None)
    db.session.add(message)
    db.session.commit()
    return message


def engine_history(message: Message) -> list[dict]:
    """Earlier turns of the same conversation, oldest first, as chat messages. A turn that failed
    keeps its question with an empty answer, so a follow-up to it still knows what was asked; small
    talk is left out, so "thanks, and for MEASURE?" leans on the question before the thanks. An
    answer also carries the passages it was given (`sources`) and whether it was a refusal, so a
    follow-up can lean on them ("the third one", "briefer"; engine/retrieval/followup.py)."""
    rows = (Message.query.filter(Message.conversation_id == message.conversation_id, Message.id < message.id,
                                 Message.status.in_(("done", "error")), Message.kind == "chat")
            .order_by(Message.id.desc()).limit(HISTORY_TURNS).all())
    history: list[dict] = []
    for row in reversed(rows):
        history.append({"role": "user", "content": row.prompt or row.question})
        history.append({"role": "assistant", "content": row.answer if row.status == "done" else "",
                        "sources": list(row.sources or []) if row.status == "done" else [],
                        "refused": bool(row.refused)})
    return history


@dataclass
class Outcome:
    """What one answer run produced, as the store writes it: the engine's `Answer`, or its
    `Failure` with what had streamed by then (the passages shown, the verdicts, the partial text)."""
    answer: Answer | None = None
    failure: Failure | None = None
    partial: str = ""  # the text streamed of the last attempt
    sources: list[dict] = field(default_factory=list)  # the passages as shown (numbered as the reader saw them)
    verdicts: list[dict] = field(default_factory=list)  # the verdicts streamed so far
    risk: str | None = None
    retry_reason: str | None = None
    searched_for: str = ""  # a follow-up's standalone question, from the sources event
    wall_ms: float | None = None


def finish_message(message_id: int, outcome: Outcome) -> Message:
    """Write the whole outcome of one answer in a single transaction."""
    message = db.session.get(Message, message_id)
    answer, failure = outcome.answer, outcome.failure
    message.finished_at = utcnow()
    message.total_ms = outcome.wall_ms
    message.retry_reason = outcome.retry_reason
    message.risk = (answer.risk if answer else None) or outcome.risk
    message.searched_for = (answer.searched_for if answer else "") or outcome.searched_for or None
    if answer is not None and failure is None:
        message.status, message.incomplete = "done", False
        message.answer, message.refused = answer.text, answer.refused
        message.disclaimer = answer.disclaimer or None
        message.verdicts = [verdict_dict(v) for v in answer.sentences] or outcome.verdicts
        message.retried = answer.retried or bool(outcome.retry_reason)
        message.retry_kept = answer.retry_kept if message.retried and not answer.refused else None
        message.sources = [s.to_dict() for s in answer.sources] or outcome.sources
        message.backend = answer.backend or None
        if answer.small_talk and not answer.refused:
            message.kind = "small_talk"  # answered from the catalogue: no answer to count in /metrics
        timings = dict(answer.timings_ms)
        timings["queue"] = answer.queue_ms
    else:
        failure = failure or Failure("interrupted", "The answer stopped before it was complete.", outcome.partial)
        message.status, message.incomplete = "error", True
        message.error_kind, message.error = failure.kind, failure.message
        message.answer = failure.partial or outcome.partial
        message.refused, message.retried, message.retry_kept = False, bool(outcome.retry_reason), None
        message.verdicts, message.sources = outcome.verdicts, outcome.sources
        timings = {}
    if outcome.wall_ms is not None:
        timings["wall"] = outcome.wall_ms
    for stage, ms in timings.items():
        if isinstance(ms, (int, float)):
            db.session.add(Timing(message_id=message.id, stage=str(stage)[:32], ms=float(ms)))
    db.session.commit()
    return message

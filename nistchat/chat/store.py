"""Conversation and message persistence for the chat: short transactions, one final write per
answer (a partial one, marked incomplete, when the answer fails)."""
from __future__ import annotations

from flask import abort, session

from ..auth import is_admin, owner_id
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


def finish_message(message_id: int, outcome: dict) -> Message:
    """Write the whole outcome of one answer in a single transaction."""
    message = db.session.get(Message, message_id)
    final = outcome.get("final") or {}
    error = outcome.get("error")
    message.answer = final.get("answer", outcome.get("partial", ""))
    message.refused = bool(final.get("refused", False))
    message.risk = final.get("risk") or outcome.get("risk")
    message.disclaimer = final.get("disclaimer") or None
    message.verdicts = final.get("sentences") or outcome.get("verdicts") or []
    message.retried = bool(final.get("retried") or outcome.get("retry_reason"))
    message.retry_reason = outcome.get("retry_reason")
    message.sources = final.get("sources") or outcome.get("sources") or []
    message.searched_for = final.get("searched_for") or outcome.get("searched_for") or None
    message.backend = final.get("backend") or outcome.get("backend")
    message.finished_at = utcnow()
    message.total_ms = outcome.get("wall_ms")
    if error:
        message.status = "error"
        message.error_kind = error.get("kind")
        message.error = error.get("message")
        message.incomplete = True
        message.answer = error.get("partial") or outcome.get("partial", "")
    else:
        message.status = "done"
        message.incomplete = bool(final.get("incomplete", False))
        if final.get("small_talk") and not message.refused:
            message.kind = "small_talk"  # answered from the catalogue: no answer to count in /metrics
    timings = dict(final.get("timings_ms") or {})
    if outcome.get("wall_ms") is not None:
        timings["wall"] = outcome["wall_ms"]
    if outcome.get("queue_ms") is not None:
        timings["queue"] = outcome["queue_ms"]
    for stage, ms in timings.items():
        if isinstance(ms, (int, float)):
            db.session.add(Timing(message_id=message.id, stage=str(stage)[:32], ms=float(ms)))
    db.session.commit()
    return message

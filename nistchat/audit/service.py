"""Run one audit for the page or the API and store it like a chat message (kind "audit"), so it is
in History and the log exports. The verifier uses the reader, so a judged audit waits its turn in
the reader queue like an answer (a full queue is refused before anything runs)."""
from __future__ import annotations

import time

from flask import current_app

from ..auth import owner_id
from ..engine.verification import audit
from ..extensions import app_runtime, db
from ..logs import daily
from ..models import Conversation, Message, Timing, utcnow
from ..web import clean_text

QUEUE_TIMEOUT_S = 600.0


def check_audit(question: str, answer: str) -> str | None:
    limit = current_app.config["SETTINGS"].answer.max_question_chars
    if not answer.strip():
        return "Paste the answer to check."
    if len(question) > limit:
        return f"The question is {len(question):,} characters long; the limit is {limit:,}."
    if len(answer) > 10 * limit:
        return f"The answer is {len(answer):,} characters long; the limit is {10 * limit:,}."
    return None


def run_audit(question: str, answer: str, docs: list[str], judge: bool) -> tuple[Message, dict]:
    """Audit, store, log; raises engine.queue.QueueFull when a judged audit finds no room. The texts
    are stored as every question is, control characters removed (PostgreSQL refuses a NUL)."""
    question, answer = clean_text(question), clean_text(answer)
    app = current_app._get_current_object()
    runtime = app_runtime(app)
    start = time.monotonic()
    ticket = runtime.queue.take(owner_id()) if judge else None
    try:
        if ticket is not None:
            runtime.queue.acquire(ticket, timeout=QUEUE_TIMEOUT_S)
        result = audit(runtime, question.strip(), answer.strip(), docs=docs, judge=judge).to_dict()
    finally:
        if ticket is not None:
            runtime.queue.finish(ticket)
    wall_ms = round((time.monotonic() - start) * 1000, 1)
    message = store_audit(question.strip(), answer.strip(), docs, result, wall_ms)
    daily.append(app.config["SETTINGS"].instance_dir, {
        "message": message.id, "conversation": message.conversation_id, "owner": message.owner, "kind": "audit",
        "question": message.question, "trust_score": result["trust_score"], "label": result["label"],
        "docs": docs, "ms": wall_ms, "backend": result["models"], "answer": message.answer})
    return message, result


def store_audit(question: str, answer: str, docs: list[str], result: dict, wall_ms: float) -> Message:
    """One conversation per audit, titled as one, with one message marked kind="audit"."""
    conv = Conversation(owner=owner_id(), title=f"Audit: {question or answer}"[:200])
    db.session.add(conv)
    db.session.flush()
    verdicts = [{"text": s["text"], "supported": s["verdict"] == "supported", "verdict": s["verdict"],
                 "passage": (s["passage"] or {}).get("n"), "reason": s["reason"]} for s in result["sentences"]]
    sources = [{**p, "rank": p["n"]} for p in result["passages"]]
    message = Message(conversation_id=conv.id, owner=owner_id(), question=question or "(no question)",
                      answer=answer, kind="audit", audit=result, verdicts=verdicts, sources=sources,
                      docs=docs or None, status="done", finished_at=utcnow(), total_ms=wall_ms,
                      backend=result["models"], attempts=1)
    db.session.add(message)
    db.session.flush()
    for stage, ms in {**result["timings_ms"], "wall": wall_ms}.items():
        db.session.add(Timing(message_id=message.id, stage=f"audit_{stage}", ms=float(ms)))
    db.session.commit()
    return message

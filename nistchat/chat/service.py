"""The one ask flow, shared by the page (`POST /ask`) and the API (`POST /api/ask`): take a place
in the reader queue, record the question, start its answer run.

The place is taken first, so a full queue is refused before anything is stored: the person
keeps their typed question and is told when to try again (`QueueFull`, HTTP 429 or 503).
"""
from __future__ import annotations

from flask import Flask, current_app

from ..auth import owner_id
from ..engine import IndexMissing, question_problem
from ..extensions import app_runtime, limiter
from ..models import Conversation, Message
from ..topics.questions import Topic
from .runs import AnswerRun, registry
from .store import start_message


def ask_limit() -> str:
    return current_app.config["SETTINGS"].web.ask_rate_limit


# One budget per client for the page and the API: separate ones would double the allowed rate.
ask_rate_limit = limiter.shared_limit(ask_limit, scope="ask")


def check_question(text: str) -> str | None:
    """Why a question cannot be asked, or None: the engine's own check, before anything is stored."""
    return question_problem(text, current_app.config["SETTINGS"].answer.max_question_chars) or None


def document_choices() -> list:
    """The indexed documents for the filter chips (`catalog.DocEntry`); none before an index exists."""
    try:
        return app_runtime(current_app._get_current_object()).documents()
    except IndexMissing:
        return []


def check_docs(docs, *, page: bool = False) -> str | None:
    """Why a document choice cannot be used (ids the index does not have, listing the known ones), or
    None. For a page (`page=True`) the known documents are named by title, as everywhere a person
    reads; the API's message keeps the ids a script sends."""
    if not docs:
        return None
    try:
        runtime = app_runtime(current_app._get_current_object())
        problem = runtime.unknown_docs(docs) or None
    except IndexMissing as exc:
        return str(exc)
    if problem and page:
        known = ", ".join(d.display for d in runtime.documents())
        return (f"{'A chosen document is' if len(docs) == 1 else 'Chosen documents are'} not in the index (it may "
                f"have been rebuilt since the page was loaded; reload it). The documents: {known}.")
    return problem


def busy_status(scope: str) -> int:
    """429 when this browser has too many questions waiting, 503 when the whole server has."""
    return 429 if scope == "browser" else 503


def submit(app: Flask, runtime, question: str, topic: Topic | None,
           conversation: Conversation | None = None, docs: list[str] | None = None) -> tuple[Message, AnswerRun]:
    """Queue, store and start one answer (limited to `docs`, already checked, when given); raises
    engine.queue.QueueFull when there is no room."""
    ticket = runtime.queue.take(owner_id())
    try:
        message = start_message(question, topic, conversation, docs=docs)
    except Exception:
        runtime.queue.finish(ticket)
        raise
    return message, registry(app).start(app, runtime, message.id, ticket)

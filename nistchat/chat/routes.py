"""Chat pages: `/` (question box, conversation, topic panel), `POST /ask` (htmx partial or, without
JavaScript, a full-page round trip), `/ask/stream/<id>` (SSE for one answer), `/new`, `/c/<id>`."""
from __future__ import annotations

from flask import (Blueprint, Response, abort, current_app, redirect, render_template, request, session,
                   stream_with_context, url_for)

from ..auth import is_admin, owner_id
from ..engine.backends import QueueFull
from ..extensions import app_runtime, db
from ..models import Message
from ..topics.questions import find_topic, load
from ..web import answer_html, clean_text, is_htmx
from .progress import estimate_s, risk_class
from .runs import registry, resume_or_abandon
from .service import ask_rate_limit, busy_status, check_docs, check_question, document_choices, submit
from .store import current_conversation, visible_conversation
from .stream import final_frames, sse_events

bp = Blueprint("chat", __name__)
bp.add_app_template_global(answer_html)  # the answer with the reader's and the checker's marks


@bp.record_once
def _share_runs(state) -> None:
    """Several processes on one database follow each other's answers (chat/shared.py)."""
    from .shared import install

    install(state.app)


def chat_page(conversation, status: int = 200, problem: str | None = None, draft: str = "",
              problem_kind: str = "bad_input", chosen_docs: list[str] = ()):
    config, _sha = load(current_app.config["SETTINGS"].questions_path)
    messages = conversation.messages if conversation else []
    return render_template("chat/index.html", conversation=conversation, messages=messages, topics=config,
                           problem=problem, problem_kind=problem_kind, draft=draft,
                           documents=document_choices(), chosen_docs=list(chosen_docs),
                           self_test=app_runtime(current_app._get_current_object()).models.self_test_result,
                           max_chars=current_app.config["SETTINGS"].answer.max_question_chars), status


@bp.get("/")
def index():
    return chat_page(current_conversation())


@bp.get("/c/<conv_id>")
def open_conversation(conv_id: str):
    """Open a past conversation (from History); further questions continue it if it is this
    browser's own. An admin reading someone else's starts a new conversation when asking."""
    conversation = visible_conversation(conv_id)
    if conversation.owner == owner_id():
        session["conversation"] = conversation.id
    else:
        session.pop("conversation", None)
    return chat_page(conversation)


@bp.post("/new")
def new_chat():
    session.pop("conversation", None)
    if is_htmx():
        return "", 204, {"HX-Redirect": url_for("chat.index")}
    return redirect(url_for("chat.index"))


@bp.post("/ask")
@ask_rate_limit
def ask():
    text = clean_text(request.form.get("question", ""))
    docs = request.form.getlist("docs")
    problem = check_question(text) or check_docs(docs, page=True)
    if problem:
        if is_htmx():
            return render_template("chat/_problem.html", kind="bad_input", message=problem), 422
        return chat_page(current_conversation(), 422, problem,
                         draft=text[:current_app.config["SETTINGS"].answer.max_question_chars], chosen_docs=docs)
    topic = None
    if request.form.get("topic"):
        config, _sha = load(current_app.config["SETTINGS"].questions_path)
        topic = find_topic(config, text)  # None if an admin renamed it meanwhile: asked as typed
    app = current_app._get_current_object()
    try:
        message, run = submit(app, app_runtime(app), text.strip(), topic, docs=docs)
    except QueueFull as exc:
        headers = {"Retry-After": str(exc.retry_after_s)}
        if is_htmx():
            return render_template("chat/_problem.html", kind="busy", message=exc.message), \
                busy_status(exc.scope), headers
        page, status = chat_page(current_conversation(), busy_status(exc.scope), exc.message, draft=text,
                                 problem_kind="busy", chosen_docs=docs)
        return page, status, headers
    if is_htmx():
        risk = "direct" if message.direct_answer else risk_class(message.prompt or message.question)
        estimate, based_on = estimate_s(risk) if risk != "direct" else (1.0, 0)
        return render_template("chat/_turn.html", message=message, estimate=estimate, based_on=based_on, risk=risk)
    # Without JavaScript: wait for the answer, then show the page (Post/Redirect/Get).
    for _event in run.follow(tick_s=5.0):
        pass
    return redirect(url_for("chat.index", _anchor=f"msg-{message.id}"))


def _own_message(message_id: int) -> Message:
    message = db.session.get(Message, message_id)
    if message is None or (message.owner != owner_id() and not is_admin()):
        abort(404)
    return message


@bp.get("/ask/stream/<int:message_id>")
def stream(message_id: int):
    """SSE for one answer. Reconnects replay the run; a finished answer is sent as stored."""
    message = _own_message(message_id)
    app = current_app._get_current_object()
    run = registry(app).get(message.id)
    if run is None and message.status == "pending":  # cut off by a server restart
        run = resume_or_abandon(app, app_runtime(app), message)
    body = sse_events(run) if run is not None else final_frames(message.id)
    return Response(stream_with_context(body), mimetype="text/event-stream",
                    headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


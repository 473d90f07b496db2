"""`/audit` (page: paste a question and an answer, get per-sentence results and a trust score),
`/audit/<id>` (a stored audit); `POST /api/audit` (the same as JSON) is in api/routes.py."""
from __future__ import annotations

from flask import Blueprint, abort, render_template, request

from ..chat.service import ask_rate_limit, busy_status, check_docs, document_choices
from ..engine.verification import AuditThresholds, METHOD
from ..engine.backends import QueueFull
from .service import check_audit, run_audit

bp = Blueprint("audit", __name__)


def page(status: int = 200, **context):
    context.setdefault("question", "")
    context.setdefault("answer", "")
    context.setdefault("chosen_docs", [])
    context.setdefault("judge", True)
    return render_template("audit/index.html", documents=document_choices(), thresholds=AuditThresholds(),
                           method=METHOD, **context), status


@bp.get("/audit")
def index():
    return page()


@bp.get("/audit/<int:message_id>")
def show(message_id: int):
    from ..chat.routes import _own_message

    message = _own_message(message_id)
    if message.kind != "audit":
        abort(404)
    return page(result=message.audit, message=message, question=message.question, answer=message.answer,
                chosen_docs=message.docs or [])


@bp.post("/audit")
@ask_rate_limit
def check():
    question, answer = request.form.get("question", ""), request.form.get("answer", "")
    docs, judge = request.form.getlist("docs"), bool(request.form.get("judge"))
    problem = check_audit(question, answer) or check_docs(docs, page=True)
    form = {"question": question, "answer": answer, "chosen_docs": docs, "judge": judge}
    if problem:
        return page(422, problem=problem, **form)
    try:
        message, result = run_audit(question, answer, docs, judge)
    except QueueFull as exc:
        body, status = page(busy_status(exc.scope), problem=exc.message, **form)
        return body, status, {"Retry-After": str(exc.retry_after_s)}
    return page(result=result, message=message, **form)

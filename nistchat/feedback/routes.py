"""`POST /feedback/<message id>`: this browser's 👍 or 👎 (with a reason) on an answer it can see;
htmx swaps the returned form in place, without script the browser goes back to the answer.
Admins: `/admin/feedback` lists the votes, newest 👎 first, and turns one into a `reported`
evaluation item; `/admin/feedback/reported.jsonl` exports that set in the golden format."""
from __future__ import annotations

from flask import Blueprint, Response, abort, redirect, render_template, request, url_for

from ..auth import admin_required
from ..chat.routes import _own_message
from ..docs.service import current_library
from ..extensions import db
from ..models import Feedback, ReportedItem
from .reported import CATEGORIES, BadItem, ItemDraft, create_item, golden_lines
from .service import BadFeedback, Vote, my_feedback, record

bp = Blueprint("feedback", __name__)


@bp.post("/feedback/<int:message_id>")
def vote(message_id: int):
    message = _own_message(message_id)
    if message.kind != "chat" or message.status == "pending":
        abort(409, "Only a finished answer can be rated.")
    try:
        choice = Vote.from_form(request.form.get("vote"), request.form.get("reason"), request.form.get("text"))
    except BadFeedback as exc:
        return render_template("feedback/_form.html", message=message, mine=my_feedback(message),
                               problem=str(exc), draft=request.form.get("text", "")), 422
    mine = record(message, choice)
    if request.headers.get("HX-Request") != "true":
        return redirect(url_for("chat.open_conversation", conv_id=message.conversation_id,
                                _anchor=f"msg-{message.id}"))
    return render_template("feedback/_form.html", message=message, mine=mine, saved=True)


ADMIN_PAGE_ROWS = 200


def feedback_page(status: int = 200, **context):
    rows = (Feedback.query.order_by((Feedback.vote == "down").desc(), Feedback.updated_at.desc())
            .limit(ADMIN_PAGE_ROWS).all())
    items = ReportedItem.query.order_by(ReportedItem.id.desc()).all()
    library = current_library()
    return render_template("feedback/admin.html", rows=rows, items=items, categories=CATEGORIES,
                           documents=list(library.entries.values()) if library else [],
                           made={i.feedback_id: i for i in items}, **context), status


@bp.get("/admin/feedback")
@admin_required
def admin_page():
    return feedback_page()


@bp.post("/admin/feedback/<int:feedback_id>/item")
@admin_required
def make_item(feedback_id: int):
    feedback = db.session.get(Feedback, feedback_id)
    if feedback is None:
        abort(404)
    try:
        draft = ItemDraft.from_form(request.form, current_library())
    except BadItem as exc:
        return feedback_page(422, problem=str(exc), problem_for=feedback_id, draft=request.form)
    item = create_item(feedback, draft)
    return redirect(url_for("feedback.admin_page", made=item.item_id, _anchor=f"item-{item.item_id}"))


@bp.get("/admin/feedback/reported.jsonl")
@admin_required
def reported_jsonl():
    return Response(golden_lines(), mimetype="application/x-ndjson; charset=utf-8",
                    headers={"Content-Disposition": 'attachment; filename="reported.jsonl"'})

"""`POST /feedback/<message id>`: this browser's 👍 or 👎 (with a reason) on an answer it can see.
htmx swaps the returned form in place; without script the browser goes back to the answer."""
from __future__ import annotations

from flask import Blueprint, abort, redirect, render_template, request, url_for

from ..chat.routes import _own_message
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

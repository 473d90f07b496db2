"""JSON API for scripts: `POST /api/ask` (NDJSON stream of the engine's events; an optional `docs`
list of document ids limits the search, unknown ids are a 400 listing the known ones),
`POST /api/audit` (a pasted answer checked against the publications), `GET /api/history`,
`GET /api/logs`. Requests that change state must be JSON (`Content-Type: application/json`): a
cross-site page cannot send that without a CORS preflight, so the API needs no CSRF token."""
from __future__ import annotations

import json

from flask import Blueprint, Response, current_app, jsonify, request, stream_with_context

from ..chat.service import ask_rate_limit, busy_status, check_docs, check_question, submit
from ..chat.store import visible_conversation
from ..audit.service import check_audit, run_audit
from ..engine.backends import QueueFull
from ..extensions import app_runtime
from ..history.service import history_page
from ..logs.export import BadRange, date_range, jsonl, log_scope, records
from ..topics.questions import find_topic, load
from ..web import api_error, clean_text, plain

bp = Blueprint("api", __name__, url_prefix="/api")


def json_object(strings: tuple[str, ...], shape: str):
    """(the request's JSON object, None), or (None, a 4xx response): 415 when the body is not JSON,
    400 when it is nested too deeply for the parser, is not an object, or a field named in
    `strings` is neither a string nor null (read them as `body.get(k) or ""`). `shape` shows the
    caller what to send."""
    if not request.is_json:
        return None, api_error(415, "bad_input", f"Send JSON: {shape}, with Content-Type: application/json.")
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # json.loads gives up on deeply nested arrays/objects
        return None, api_error(400, "bad_input", "The JSON body is nested too deeply.")
    if not isinstance(body, dict) or not all(isinstance(body.get(k), (str, type(None))) for k in strings):
        return None, api_error(400, "bad_input", f"The body must be a JSON object: {shape}.")
    return body, None


@bp.post("/ask")
@ask_rate_limit
def ask():
    body, problem = json_object(("question", "conversation_id"),
                                '{"question": "...", "conversation_id": "..." (optional), "docs": [ids] (optional)}')
    if problem:
        return problem
    text = clean_text(body.get("question") or "")
    docs = body.get("docs") or []
    reason = check_question(text) or check_docs(docs)
    if reason:
        return api_error(400, "bad_input", reason)
    conversation = visible_conversation(body["conversation_id"][:32]) if body.get("conversation_id") else None
    topic = None
    if body.get("topic"):
        config, _ = load(current_app.config["SETTINGS"].questions_path)
        topic = find_topic(config, text)
    app = current_app._get_current_object()
    try:
        message, run = submit(app, app_runtime(app), text.strip(), topic, conversation, docs=docs)
    except QueueFull as exc:
        response, status = api_error(busy_status(exc.scope), "busy", exc.message)
        return response, status, {"Retry-After": str(exc.retry_after_s)}
    ids = {"message_id": message.id, "conversation_id": message.conversation_id}

    def lines():
        yield json.dumps({"type": "accepted", **ids}) + "\n"
        for event in run.follow(tick_s=app.config["SETTINGS"].web.heartbeat_s):
            if event is None:
                yield json.dumps({"type": "heartbeat"}) + "\n"
            elif event.get("type") == "stored":
                yield json.dumps({**event, **ids}) + "\n"
            else:
                yield json.dumps(event, ensure_ascii=False, default=str) + "\n"

    return Response(stream_with_context(lines()), mimetype="application/x-ndjson")


@bp.get("/history")
def history():
    view = history_page()
    if view["q"]:
        items = [{"message_id": h.message_id, "conversation_id": h.conversation_id,
                  "time": h.created_at.isoformat(timespec="seconds"),
                  "question": plain(h.question), "snippet": plain(h.answer)} for h in view["hits"]]
    else:
        items = [{"conversation_id": r.id, "title": r.title, "updated": r.updated_at.isoformat(timespec="seconds"),
                  "messages": r.messages} for r in view["rows"]]
    return jsonify({"q": view["q"], "page": view["page"], "total": view["total"], "items": items})


@bp.get("/logs")
def logs():
    owner = log_scope()
    try:
        first, last = date_range(request.args.get("from"), request.args.get("to"))
    except BadRange as exc:
        return api_error(400, "bad_input", str(exc))
    return Response(stream_with_context(jsonl(records(first, last, owner))), mimetype="application/x-ndjson")


@bp.post("/audit")
@ask_rate_limit
def api_audit():
    body, problem = json_object(("question", "answer"),
                                '{"question": "...", "answer": "...", "docs": [ids] (optional), "judge": false (optional)}')
    if problem:
        return problem
    docs = body.get("docs") or []
    question, answer = body.get("question") or "", body.get("answer") or ""
    problem = check_audit(question, answer) or check_docs(docs)
    if problem:
        return api_error(400, "bad_input", problem)
    try:
        message, result = run_audit(question, answer, docs, body.get("judge", True) is not False)
    except QueueFull as exc:
        response, status = api_error(busy_status(exc.scope), "busy", exc.message)
        return response, status, {"Retry-After": str(exc.retry_after_s)}
    return {**result, "message_id": message.id, "conversation_id": message.conversation_id}

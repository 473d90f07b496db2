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
from ..engine.queue import QueueFull
from ..extensions import app_runtime
from ..history.service import history_page
from ..logs.export import BadRange, date_range, jsonl, log_scope, records
from ..topics.questions import find_topic, load
from ..web import api_error, clean_text, plain

bp = Blueprint("api", __name__, url_prefix="/api")


@bp.post("/ask")
@ask_rate_limit
def ask():
    if not request.is_json:
        return api_error(415, "bad_input", "Send JSON: {\"question\": \"...\"} with Content-Type: application/json.")
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # json.loads gives up on deeply nested arrays/objects
        return api_error(400, "bad_input", "The JSON body is nested too deeply.")
    if not isinstance(body, dict) or not isinstance(body.get("question", ""), str) \
            or not isinstance(body.get("conversation_id") or "", str):
        return api_error(400, "bad_input", "The body must be a JSON object with a \"question\" string "
                                         "(and optionally a \"conversation_id\" string).")
    text = clean_text(body.get("question", ""))
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
    if not request.is_json:
        return api_error(415, "bad_input", "Send JSON: {\"question\": \"...\", \"answer\": \"...\"}.")
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not all(isinstance(body.get(k, ""), str) for k in ("question", "answer")):
        return api_error(400, "bad_input", "The body must be a JSON object with \"question\" and \"answer\" strings "
                                           "(optionally \"docs\": [ids] and \"judge\": false).")
    docs = body.get("docs") or []
    problem = check_audit(body.get("question", ""), body.get("answer", "")) or check_docs(docs)
    if problem:
        return api_error(400, "bad_input", problem)
    try:
        message, result = run_audit(body.get("question", ""), body["answer"], docs, body.get("judge", True) is not False)
    except QueueFull as exc:
        response, status = api_error(busy_status(exc.scope), "busy", exc.message)
        return response, status, {"Retry-After": str(exc.retry_after_s)}
    return {**result, "message_id": message.id, "conversation_id": message.conversation_id}

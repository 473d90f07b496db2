"""`/status`: what serves each model role and why, index and database size, model load state,
P80 answer time per risk class, and recent errors, so an operator can see health at a glance."""
from __future__ import annotations

import os

from datetime import timedelta

from flask import Blueprint, current_app, jsonify, render_template, request

from ..auth import is_admin
from ..chat.progress import estimate_s
from ..chat.runs import registry
from ..docs.service import current_library
from ..extensions import app_database, app_runtime, db
from ..models import Message, utcnow

bp = Blueprint("status", __name__)


def _size(path) -> int:
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return 0


def collect() -> dict:
    app = current_app._get_current_object()
    settings = app.config["SETTINGS"]
    runtime = app_runtime(app)
    try:
        roles = runtime.models.describe()
        roles_error = ""
    except Exception as exc:  # the page must render even when model planning fails
        roles, roles_error = [], str(exc)
    index = {"path": str(settings.index_dir), "bytes": _size(settings.index_dir), "ready": False, "message": ""}
    try:
        loaded = runtime.index
        index["ready"] = True
        for attr in ("parents", "children"):
            value = getattr(loaded, attr, None)
            if value is not None:
                try:
                    index[attr] = len(value)
                except TypeError:
                    pass
    except Exception as exc:
        index["message"] = str(exc)
    second = None
    if index["ready"]:
        try:
            second = runtime.retriever.second.state() if runtime.retriever.second else None
        except Exception as exc:  # the page must render; say what went wrong
            second = {"embedder": settings.retrieval.second_embedder, "ready": False, "reason": str(exc)}
    index["second"] = second
    library = current_library() if index["ready"] else None
    index["documents"] = [{"id": e.id, "title": e.display, "label": e.label}
                          for e in (library.entries.values() if library else [])]
    database = app_database(app)
    since = utcnow() - timedelta(hours=24)
    p80 = {}
    for risk in ("LOW", "HIGH"):
        seconds, samples = estimate_s(risk)
        p80[risk] = {"seconds": seconds, "samples": samples}
    return {
        "roles": roles, "roles_error": roles_error, "index": index,
        "database": {"path": database.describe(), "bytes": database.size_bytes(db.session),
                     "messages": Message.query.count()},
        "p80": p80,
        "errors_24h": Message.query.filter(Message.created_at >= since, Message.status == "error").count(),
        "answers_running": registry(app).active(),
        "self_test": runtime.models.self_test_result,
        "queue": runtime.queue.snapshot(),
        "reader_pace": runtime.models.reader_pace(),
        "load": _load(),
    }


def _load() -> dict:
    """The host's load averages and cores: what the reader's thread choice reacts to."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return {}
    return {"1m": round(one, 2), "5m": round(five, 2), "15m": round(fifteen, 2), "cores": os.cpu_count()}


def health(data: dict) -> str:
    """ready: the index is loaded, the models could be planned, the embedder and reader have no
    error and the self-test did not fail; otherwise degraded."""
    broken_role = any(r.get("error") for r in data["roles"] if r.get("role") in ("embedder", "reader"))
    failed = (data.get("self_test") or {}).get("state") == "failed"
    ready = data["index"]["ready"] and not data["roles_error"] and not broken_role and not failed
    return "ready" if ready else "degraded"


@bp.get("/status")
def index():
    """Everyone sees ready or degraded; the paths, models and error texts are for admins."""
    data = collect()
    state = health(data)
    wants_json = request.accept_mimetypes.best == "application/json" or request.args.get("format") == "json"
    if not is_admin():
        if wants_json:
            return jsonify({"status": state})
        return render_template("status/public.html", state=state)
    if wants_json:
        return jsonify({"status": state, **data})
    return render_template("status/index.html", state=state, **data)

"""`/metrics` (admin): where the answer time goes, from the stored per-stage timings, with
server-rendered SVG charts; `/metrics.json` for scripts and `/metrics.prom` (Prometheus text
format), both admin only. `?window=day|week|all`."""
from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify, render_template, request

from ..auth import admin_required
from ..extensions import app_runtime
from .service import STAGES, WINDOWS, bars, collect, prometheus

bp = Blueprint("metrics", __name__)


def _window() -> str:
    window = request.args.get("window", "week")
    return window if window in WINDOWS else "week"


def _data() -> dict:
    """The window's stored figures, and the reader queue now (slots in use, answers waiting)."""
    return {**collect(_window()), "queue": app_runtime(current_app).queue.snapshot()}


@bp.get("/metrics")
@admin_required
def index():
    data = _data()
    charts = {
        "per_hour": bars([h["answers"] for h in data["per_hour"]]),
        "refused": bars([d["refused"] for d in data["per_day"]]),
        "flagged": bars([d["flagged"] for d in data["per_day"]]),
        "p95": bars([s["p95"] or 0 for s in data["stages"].values()]),
        "down": bars([d["down"] for d in data["feedback"]["per_day"]]),
    }
    return render_template("metrics/index.html", data=data, charts=charts, windows=list(WINDOWS), stages=STAGES)


@bp.get("/metrics.json")
@admin_required
def as_json():
    return jsonify(_data())


@bp.get("/metrics.prom")
@admin_required
def as_prometheus():
    return Response(prometheus(_data()), mimetype="text/plain; version=0.0.4")

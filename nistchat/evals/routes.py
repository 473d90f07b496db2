"""`/evals`: evaluation runs recorded by `nistchat eval` (admin only)."""
from __future__ import annotations

from flask import Blueprint, abort, render_template

from ..auth import admin_required
from ..extensions import db
from ..models import EvalRun

bp = Blueprint("evals", __name__, url_prefix="/evals")


@bp.get("")
@admin_required
def index():
    runs = EvalRun.query.order_by(EvalRun.id.desc()).limit(100).all()
    return render_template("evals/index.html", runs=runs)


@bp.get("/<int:run_id>")
@admin_required
def detail(run_id: int):
    run = db.session.get(EvalRun, run_id)
    if run is None:
        abort(404)
    return render_template("evals/detail.html", run=run)

"""The topic panel as its own partial, read from questions_config on every request (so an admin's
save shows without a restart)."""
from __future__ import annotations

from flask import Blueprint, current_app, render_template

from .questions import load

bp = Blueprint("topics", __name__)


@bp.get("/topics")
def panel():
    config, _sha = load(current_app.config["SETTINGS"].questions_path)
    return render_template("topics/_panel.html", topics=config)

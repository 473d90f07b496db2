"""`/history`: this browser's conversations (admin: everyone's), newest first, paged, with FTS5
search as you type (htmx swaps just the results)."""
from __future__ import annotations

from flask import Blueprint, render_template, request

from ..web import is_htmx
from .service import history_page

bp = Blueprint("history", __name__)


@bp.get("/history")
def index():
    context = history_page()
    if is_htmx() and request.headers.get("HX-Target") == "results":
        return render_template("history/_results.html", **context)
    return render_template("history/index.html", **context)

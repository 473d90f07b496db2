"""`/history`: this browser's conversations (admin: everyone's), newest first, paged, with FTS5
search as you type (htmx swaps just the results)."""
from __future__ import annotations

from flask import Blueprint, current_app, render_template, request

from ..auth import is_admin, owner_id
from ..web import is_htmx
from .search import conversations, search

bp = Blueprint("history", __name__)


def page_arg() -> int:
    try:
        return max(1, int(request.args.get("page", 1)))
    except ValueError:
        return 1


@bp.get("/history")
def index():
    q = request.args.get("q", "").strip()[:200]
    page = page_arg()
    size = current_app.config["HISTORY_PAGE_SIZE"]
    scope = None if is_admin() else owner_id()
    if q:
        hits, total = search(q, scope, page, size)
        rows = []
    else:
        rows, total = conversations(scope, page, size)
        hits = []
    context = dict(q=q, page=page, size=size, total=total, hits=hits, rows=rows,
                   pages=max(1, -(-total // size)))
    if is_htmx() and request.headers.get("HX-Target") == "results":
        return render_template("history/_results.html", **context)
    return render_template("history/index.html", **context)

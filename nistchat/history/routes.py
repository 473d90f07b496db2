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


def history_page() -> dict:
    """The request's history view: search hits for `?q=`, else conversations, one page of them,
    scoped to this browser (admin: everyone). Shared by the page and /api/history."""
    q = request.args.get("q", "").strip()[:200]
    page = page_arg()
    size = current_app.config["HISTORY_PAGE_SIZE"]
    scope = None if is_admin() else owner_id()
    hits, rows = [], []
    if q:
        hits, total = search(q, scope, page, size)
    else:
        rows, total = conversations(scope, page, size)
    return dict(q=q, page=page, size=size, total=total, hits=hits, rows=rows, pages=max(1, -(-total // size)))


@bp.get("/history")
def index():
    context = history_page()
    if is_htmx() and request.headers.get("HX-Target") == "results":
        return render_template("history/_results.html", **context)
    return render_template("history/index.html", **context)

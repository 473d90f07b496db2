"""The request's history view, shared by `/history` and `/api/history`: search hits for `?q=`,
else conversations, one page of them, scoped to this browser (admin: everyone)."""
from __future__ import annotations

from flask import abort, current_app, request

from ..auth import is_admin, owner_id
from ..web import clean_text
from .search import conversations, search

MAX_PAGE = 100_000  # far beyond any real history; a bigger page number overflowed SQLite's OFFSET


def page_arg() -> int:
    """`?page=`: garbage means page 1; a number past MAX_PAGE is refused with a 400."""
    try:
        page = int(request.args.get("page", 1))
    except ValueError:
        return 1
    if page > MAX_PAGE:
        abort(400, f"page must be between 1 and {MAX_PAGE:,}.")
    return max(1, page)


def history_page() -> dict:
    """The request's history view: search hits for `?q=`, else conversations, one page of them,
    scoped to this browser (admin: everyone). Shared by the page and /api/history."""
    q = clean_text(request.args.get("q", "")).strip()[:200]
    page = page_arg()
    size = current_app.config["SETTINGS"].web.history_page_size
    scope = None if is_admin() else owner_id()
    hits, rows = [], []
    if q:
        hits, total = search(q, scope, page, size)
    else:
        rows, total = conversations(scope, page, size)
    return dict(q=q, page=page, size=size, total=total, hits=hits, rows=rows, pages=max(1, -(-total // size)))

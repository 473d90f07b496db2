"""`/docs` (the indexed documents) and `/docs/<doc>` (one document, rendered from the index's
passages, with its table of contents). `?at=<passage id>` highlights the passage a citation
points to (the link also carries `#<passage id>`, so the page opens there) and `?claim=` marks
the passage's sentences, or table row, that match the answer's sentence. Asked by htmx (a citation
clicked on a wide screen), the same URL answers with the viewer as a pane beside the page."""
from __future__ import annotations

from flask import Blueprint, abort, render_template, request, url_for

from ..web import clean_text, is_htmx, render_error
from .render import marked_text, to_html
from .service import current_library

bp = Blueprint("docs", __name__)

MAX_CLAIM_CHARS = 600  # one answer sentence; a longer one is cut, never refused


@bp.get("/docs")
def index():
    library = current_library()
    if library is None:
        return render_error("The document index is not built yet (run `nistchat ingest`).", 503, "No documents")
    return render_template("docs/index.html", entries=list(library.entries.values()),
                           counts={d: len(library.document(d).sections) for d in library.entries})


@bp.get("/docs/<doc>")
def view(doc: str):
    library = current_library()
    if library is None:
        return render_error("The document index is not built yet (run `nistchat ingest`).", 503, "No documents")
    rendered = library.document(doc)
    if rendered is None:
        abort(404)
    at = request.args.get("at", "")
    target = library.parents.get(at)
    if target is not None and target.doc != doc:
        target = None  # a passage of another document: open this one at its top
    claim = clean_text(request.args.get("claim", ""))[:MAX_CLAIM_CHARS].strip()
    marked = to_html(marked_text(target, claim)) if target is not None and claim else None
    at = target.id if target else ""
    if is_htmx():
        page_url = url_for("docs.view", doc=doc, at=at or None, claim=claim or None, _anchor=at or None)
        return render_template("docs/_pane.html", doc=rendered, at=at, marked=marked, claim=claim, page_url=page_url)
    return render_template("docs/view.html", doc=rendered, at=at, marked=marked, claim=claim)

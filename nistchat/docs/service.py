"""The request's document library (the loaded index's documents) and the titles pages show for
document ids, so every page names a document the same way."""
from __future__ import annotations

from flask import current_app

from ..engine.corpus import DocEntry
from ..engine.errors import IndexMissing
from ..engine.index import StoreError
from ..extensions import app_runtime
from .render import Library, library_for


def current_library() -> Library | None:
    """The library of the app's index; None before an index exists (pages then fall back to the
    titles stored with each answer)."""
    try:
        return library_for(app_runtime(current_app._get_current_object()).index)
    except (IndexMissing, StoreError):
        return None


VIEWER_TEMPLATES = ("docs/view.html", "docs/_pane.html", "docs/_body.html", "docs/_toc.html", "docs/_cite.html")


def warm_up(app) -> int:
    """Render every document of the app's index and compile the viewer's templates (serve does
    this at start), so the first citation a person opens is not the one that pays for it.
    Returns how many documents were rendered."""
    library = library_for(app_runtime(app).index)
    for doc_id in library.entries:
        library.document(doc_id)
    for name in VIEWER_TEMPLATES:
        app.jinja_env.get_template(name)
    return len(library.entries)


def doc_title(doc_id: str, stored_title: str | None = "") -> str:
    """A document's display title ("AI RMF 1.0 (NIST AI 100-1)") for its id: from the index, else
    from the title stored with the answer, else from the id's publication number."""
    library = current_library()
    if library is not None:
        return library.title(doc_id, stored_title or "")
    return DocEntry(doc_id, stored_title or "").display


def doc_titles(doc_ids) -> str:
    """Several ids as one line of titles (a question's document filter)."""
    return ", ".join(doc_title(d) for d in doc_ids or [])

"""Small helpers every blueprint shares: htmx detection, error responses (a clear message, never a
stack trace), template filters and FTS5's highlight markers. A leaf: it imports no blueprint."""
from __future__ import annotations

import json
from pathlib import Path

from flask import Flask, jsonify, render_template, request
from markupsafe import Markup, escape


STATIC_DIR = Path(__file__).resolve().parent / "static"
HIGHLIGHT_START, HIGHLIGHT_END = "\x02", "\x03"  # sentinels FTS5 highlight() puts around matches


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def plain(highlighted: str) -> str:
    """FTS5 highlight() output without its match marks."""
    return highlighted.replace(HIGHLIGHT_START, "").replace(HIGHLIGHT_END, "")


def highlight(text: str | None) -> Markup:
    """Escape text first, then turn FTS5's sentinel marks into <mark>: safe on user text."""
    escaped = str(escape(text or ""))
    return Markup(escaped.replace(HIGHLIGHT_START, "<mark>").replace(HIGHLIGHT_END, "</mark>"))


def seconds(ms) -> str:
    if ms is None:
        return "–"
    return f"{ms / 1000:.1f} s"


def find_source(sources, ref):
    """The shown passage a verdict or citation points to: by 1-based rank, or by passage id."""
    for source in sources or []:
        if ref is not None and (source.get("rank") == ref or source.get("id") == ref):
            return source
    return None


def htmx_assets(app: Flask) -> list[dict]:
    pins = json.loads((STATIC_DIR / "htmx-pins.json").read_text(encoding="utf-8"))
    cdn = app.config["SETTINGS"].web.htmx == "cdn"
    return [{"src": pin["cdn"] if cdn else f"/static/vendor/{pin['local']}",
             "integrity": pin["integrity"] if cdn else None} for pin in pins.values()]


ERROR_KINDS = {400: "bad_input", 403: "forbidden", 404: "not_found", 405: "bad_method", 413: "too_large",
               429: "rate_limited", 500: "internal"}


def api_error(status: int, kind: str, message: str):
    """The API's error body: the same shape as the engine's error event."""
    return jsonify({"type": "error", "kind": kind, "message": message}), status


def render_error(message: str, status: int, title: str = "Something went wrong"):
    """The error as the caller reads it: JSON for the API's scripts, a partial for htmx, else a page."""
    if request.path.startswith("/api/"):
        return api_error(status, ERROR_KINDS.get(status, "error"), message)
    template = "_error.html" if is_htmx() else "error.html"
    return render_template(template, title=title, message=message, status=status), status

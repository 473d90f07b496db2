"""Wiring the web layer: blueprints, template helpers, error pages (a clear message, never a
stack trace) and the per-browser owner id."""
from __future__ import annotations

import json
import math

from flask import Flask, jsonify, render_template, request
from flask_wtf.csrf import CSRFError
from markupsafe import Markup, escape
from werkzeug.exceptions import HTTPException

from .auth import is_admin, owner_id
from .config import PROJECT_ROOT

HIGHLIGHT_START, HIGHLIGHT_END = "\x02", "\x03"  # sentinels FTS5 highlight() puts around matches


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


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


def _htmx_assets(app: Flask) -> list[dict]:
    pins = json.loads((PROJECT_ROOT / "static" / "htmx-pins.json").read_text(encoding="utf-8"))
    cdn = app.config.get("HTMX_SOURCE") == "cdn"
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


def init_app(app: Flask) -> None:
    from .admin.routes import bp as admin_bp
    from .api.routes import bp as api_bp
    from .chat.routes import bp as chat_bp
    from .evals.routes import bp as evals_bp
    from .extensions import csrf
    from .history.routes import bp as history_bp
    from .logs.routes import bp as logs_bp
    from .status.routes import bp as status_bp
    from .topics.routes import bp as topics_bp

    for bp in (chat_bp, topics_bp, history_bp, logs_bp, admin_bp, evals_bp, status_bp, api_bp):
        app.register_blueprint(bp)
    # JSON API for scripts: protected against CSRF by requiring a JSON body (a cross-site form
    # cannot send application/json without a CORS preflight, which this app never grants).
    csrf.exempt(api_bp)

    assets = _htmx_assets(app)
    app.jinja_env.filters["highlight"] = highlight
    app.jinja_env.filters["seconds"] = seconds
    app.jinja_env.globals["ceil"] = math.ceil
    app.jinja_env.globals["find_source"] = find_source

    @app.context_processor
    def _template_globals():
        return {"htmx_assets": assets, "is_admin": is_admin(), "is_htmx": is_htmx()}

    @app.before_request
    def _ensure_owner():
        owner_id()

    @app.after_request
    def _vary_on_htmx(response):
        """Pages answer htmx with a partial and a browser with the full page at the same URL
        (hx-push-url puts it in the address bar): caches must keep the two apart, or Back or a
        reload can show a bare fragment."""
        response.vary.update(("HX-Request", "HX-Target"))
        return response

    @app.errorhandler(CSRFError)
    def _csrf_error(exc):
        return render_error(f"The form expired or was sent without its security token ({exc.description}). "
                            "Reload the page and try again.", 400, "Security check failed")

    @app.errorhandler(403)
    def _forbidden(_exc):
        return render_error("This needs an administrator login.", 403, "Not allowed")

    @app.errorhandler(404)
    def _not_found(_exc):
        return render_error("That page or conversation does not exist.", 404, "Not found")

    @app.errorhandler(413)
    def _too_large(_exc):
        return render_error("The request is too large.", 413, "Too large")

    @app.errorhandler(429)
    def _rate_limited(exc):
        return render_error(f"Too many questions from this computer ({exc.description}). Please wait a moment.",
                            429, "Slow down")

    @app.errorhandler(HTTPException)
    def _http_error(exc):  # any other refusal (405, ...): our page, not werkzeug's
        return render_error(exc.description or exc.name, exc.code or 500, exc.name)

    @app.errorhandler(500)
    def _server_error(_exc):
        return render_error("The server hit an unexpected problem; it has been logged.", 500)

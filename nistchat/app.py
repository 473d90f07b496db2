"""NISTChat web app factory (flaskr pattern): `create_app(test_config=None)`.

test_config may carry `SETTINGS` (a Settings object), `SETTINGS_OVERRIDES` (dict for
load_settings), `RUNTIME` (an engine Runtime to share, so tests load models once) and any
Flask config keys. This module is the top of the web layer: it imports the blueprints; nothing
imports it but the entry points (CLI, wsgi.py, tests).
"""
from __future__ import annotations

import functools
import itertools
import math
import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

from flask import Flask
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, SecurityError
from werkzeug.middleware.proxy_fix import ProxyFix

from .auth import is_admin, owner_id
from .config import Settings, load_settings
from .database import database_for
from .engine.text import without_end_mark
from .extensions import DATABASE_KEY, RUNTIME_KEY, app_database, csrf, db, limiter, migrate
from .web import (SECURITY_HEADERS, BoundedInt, content_security_policy, find_source, highlight, htmx_assets, is_htmx,
                  render_error, retry_note, seconds)

PACKAGE_DIR = Path(__file__).resolve().parent  # templates/, static/, migrations/ ship inside the package


def site_secret(instance_dir: Path) -> str:
    """The session-signing key when none is configured: random, made once and kept in
    instance/secret_key (mode 600), so sessions survive restarts. The packaged default is public
    (it is in the source), and anyone could sign an admin session with it."""
    path = Path(instance_dir) / "secret_key"
    if path.exists() and path.read_text(encoding="utf-8").strip():
        return path.read_text(encoding="utf-8").strip()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".secret_key.")  # created with mode 600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(secrets.token_hex(32) + "\n")
        try:
            os.link(tmp, path)  # atomic: of two processes starting at once, one key wins
        except FileExistsError:
            if not path.read_text(encoding="utf-8").strip():  # an empty file left by a crash
                os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path.read_text(encoding="utf-8").strip()


def create_app(test_config: dict | None = None) -> Flask:
    test_config = dict(test_config or {})
    settings: Settings = test_config.pop("SETTINGS", None) or load_settings(
        overrides=test_config.pop("SETTINGS_OVERRIDES", None))
    runtime = test_config.pop("RUNTIME", None)
    settings.instance_dir.mkdir(parents=True, exist_ok=True)
    database = database_for(settings.database_uri)

    app = Flask(__name__, instance_path=str(settings.instance_dir), instance_relative_config=True,
                template_folder=str(PACKAGE_DIR / "templates"), static_folder=str(PACKAGE_DIR / "static"))
    app.config.from_mapping(
        SETTINGS=settings,  # the one typed configuration; blueprints read settings.web, settings.answer, ...
        SECRET_KEY=settings.web.secret_key or site_secret(settings.instance_dir),
        SQLALCHEMY_DATABASE_URI=settings.database_uri,
        SQLALCHEMY_ENGINE_OPTIONS=database.engine_options(),
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.web.session_cookie_secure,
        TRUSTED_HOSTS=settings.web.allowed_hosts or None,  # another Host header is a 400
        PERMANENT_SESSION_LIFETIME=timedelta(days=90),
        WTF_CSRF_TIME_LIMIT=None,  # a chat tab stays open all day; the token is bound to the session
        RATELIMIT_ENABLED=True,
        RATELIMIT_HEADERS_ENABLED=True,
        MAX_CONTENT_LENGTH=2 * 1024 * 1024,
    )
    app.config.update(test_config)
    app.url_map.converters["int"] = BoundedInt  # before the blueprints add their <int:...> rules

    db.init_app(app)
    app.extensions[DATABASE_KEY] = database
    with app.app_context():
        database.prepare(db.engine)
    migrate.init_app(app, db, directory=str(PACKAGE_DIR / "migrations"), render_as_batch=True)
    csrf.init_app(app)
    limiter.init_app(app)

    app.extensions[RUNTIME_KEY] = runtime
    _register(app)
    if settings.web.proxy_count:  # the client address the rate limits see comes from X-Forwarded-For
        n = settings.web.proxy_count
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n, x_port=n, x_prefix=n)
    return app


def startup_warnings(settings: Settings) -> list[str]:
    """What an operator should fix, printed when the server starts (`serve`, wsgi.py)."""
    warnings = []
    if not settings.web.admin_password_hash:
        warnings.append("admin login is off (no web.admin_password_hash). Turn it on with: "
                        "nistchat admin set-password")
    if not settings.web.allowed_hosts:
        warnings.append("web.allowed_hosts is empty: any Host header is answered. Set it to the names "
                        "this site is reached by, e.g. allowed_hosts = [\"chat.example.org\", \"localhost\"].")
    return warnings


def upgrade_database(app: Flask, revision: str = "head", backup_dir: Path | None = None) -> Path | None:
    """Bring the schema to `revision` (serve and wsgi.py call this before the first request).
    With `backup_dir`, a database that holds data and has migrations to run is backed up there
    first (`make run` does this), so an upgrade that goes wrong loses nothing: the path of the
    backup is returned (None when none was needed)."""
    from flask_migrate import upgrade
    backup = None
    with app.app_context():
        if backup_dir is not None:
            backup = backup_before_upgrade(app, Path(backup_dir), revision)
        upgrade(revision=revision)
    return backup


def database_revisions(app: Flask, target: str = "head") -> tuple[str | None, str | None]:
    """(the database's revision, `target` resolved): None for a database never migrated."""
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError
    with app.app_context():
        script = ScriptDirectory.from_config(migrate.get_config())
        try:
            wanted = script.get_revision(target)
        except CommandError:  # a relative target ("+1"): unknown here, so an upgrade is assumed
            wanted = None
        with db.engine.connect() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
    return current, wanted.revision if wanted is not None else None


def holds_data(app: Flask) -> bool:
    """Any row in any of the models' tables that exist yet (an older revision has fewer)."""
    from sqlalchemy import inspect, literal, select, table
    with app.app_context(), db.engine.connect() as conn:
        present = set(inspect(conn).get_table_names())
        return any(conn.execute(select(literal(1)).select_from(table(t.name)).limit(1)).first()
                   for t in db.metadata.sorted_tables if t.name in present)


def backup_before_upgrade(app: Flask, backup_dir: Path, revision: str = "head") -> Path | None:
    current, wanted = database_revisions(app, revision)
    if current is None or current == wanted or not holds_data(app):
        return None
    from .models import utcnow
    database = app_database(app)
    path = backup_dir / f"nistchat-{current}-before-{wanted}-{utcnow():%Y%m%d-%H%M%S}{database.backup_suffix}"
    with app.app_context():
        database.backup(db.engine, path)
    return path


def _register(app: Flask) -> None:
    from .admin.routes import bp as admin_bp
    from .api.routes import bp as api_bp
    from .audit.routes import bp as audit_bp
    from .chat.routes import bp as chat_bp
    from .docs.render import preview_text
    from .docs.routes import bp as docs_bp
    from .docs.service import doc_title, doc_titles
    from .evals.routes import bp as evals_bp
    from .feedback.routes import bp as feedback_bp
    from .feedback.service import my_feedback
    from .models import FEEDBACK_REASONS
    from .history.routes import bp as history_bp
    from .metrics.routes import bp as metrics_bp
    from .logs.routes import bp as logs_bp
    from .status.routes import bp as status_bp
    from .topics.routes import bp as topics_bp

    for bp in (chat_bp, topics_bp, history_bp, logs_bp, admin_bp, evals_bp, metrics_bp, status_bp, audit_bp,
               docs_bp, feedback_bp, api_bp):
        app.register_blueprint(bp)
    # JSON API for scripts: protected against CSRF by requiring a JSON body (a cross-site form
    # cannot send application/json without a CORS preflight, which this app never grants).
    csrf.exempt(api_bp)

    assets = htmx_assets(app)
    app.jinja_env.filters["highlight"] = highlight
    app.jinja_env.filters["seconds"] = seconds
    app.jinja_env.filters["retry_note"] = retry_note
    app.jinja_env.filters["split_sentences"] = _passage_sentences
    app.jinja_env.filters["without_end_mark"] = without_end_mark
    app.jinja_env.filters["doc_title"] = doc_title
    app.jinja_env.filters["doc_titles"] = doc_titles
    app.jinja_env.filters["passage_preview"] = preview_text
    app.jinja_env.globals["ceil"] = math.ceil
    app.jinja_env.globals["uid"] = functools.partial(next, itertools.count(1))  # unique element ids in a page
    app.jinja_env.globals["find_source"] = find_source
    app.jinja_env.globals["my_feedback"] = my_feedback
    app.jinja_env.globals["feedback_reasons"] = FEEDBACK_REASONS

    @app.context_processor
    def _template_globals():
        return {"htmx_assets": assets, "is_admin": is_admin(), "is_htmx": is_htmx()}

    @app.before_request
    def _ensure_owner():
        owner_id()
        is_admin()  # the admin session is checked (and touched) before the view writes anything

    csp = content_security_policy(assets)

    @app.after_request
    def _security_headers(response):
        response.headers.setdefault("Content-Security-Policy", csp)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

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

    @app.errorhandler(SecurityError)
    def _untrusted_host(_exc):  # no URL adapter for that host, so no page template either
        return "This site does not answer to that host name (web.allowed_hosts).\n", 400, \
            {"Content-Type": "text/plain; charset=utf-8"}

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


def _passage_sentences(text: str) -> list[str]:
    """A passage as the audit page shows it: sentence by sentence, so supporting ones can be marked."""
    from .engine.text import split_sentences

    return split_sentences(text or "")

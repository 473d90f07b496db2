"""NISTChat web app factory (flaskr pattern): `create_app(test_config=None)`.

test_config may carry `SETTINGS` (a Settings object), `SETTINGS_OVERRIDES` (dict for
load_settings), `RUNTIME` (an engine Runtime to share, so tests load models once) and any
Flask config keys.
"""
from __future__ import annotations

import dataclasses
import os
import secrets
import tempfile
import threading
from datetime import timedelta
from pathlib import Path

from flask import Flask

from .config import PROJECT_ROOT, Settings, load_settings

RUNTIME_KEY = "nistchat_runtime"
_DEFAULT_SECRET = next(f.default for f in dataclasses.fields(Settings) if f.name == "secret_key")


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

    app = Flask(__name__, instance_path=str(settings.instance_dir), instance_relative_config=True,
                template_folder=str(PROJECT_ROOT / "templates"), static_folder=str(PROJECT_ROOT / "static"))
    app.config.from_mapping(settings.as_flask_config())
    app.config.from_mapping(
        SQLALCHEMY_DATABASE_URI=f"sqlite:///{settings.db_path}",
        SQLALCHEMY_ENGINE_OPTIONS={"connect_args": {"timeout": 15, "check_same_thread": False}},
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=timedelta(days=90),
        WTF_CSRF_TIME_LIMIT=None,  # a chat tab stays open all day; the token is bound to the session
        RATELIMIT_ENABLED=True,
        RATELIMIT_HEADERS_ENABLED=True,
        ASK_RATE_LIMIT=settings.extra.get("ask_rate_limit", "12 per minute"),
        HTMX_SOURCE=settings.extra.get("htmx", "local"),  # local (offline, default) | cdn
        P80_MIN_SAMPLES=int(settings.extra.get("p80_min_samples", 5)),
        P80_DEFAULT_S={"LOW": float(settings.extra.get("p80_default_low_s", 30)),
                       "HIGH": float(settings.extra.get("p80_default_high_s", 60))},
        HISTORY_PAGE_SIZE=20,
        HEARTBEAT_S=10.0,
        MAX_CONTENT_LENGTH=2 * 1024 * 1024,
    )
    app.config.update(test_config)
    if app.config.get("SECRET_KEY") in (None, "", _DEFAULT_SECRET):
        app.config["SECRET_KEY"] = site_secret(settings.instance_dir)

    from .extensions import csrf, db, limiter, migrate
    db.init_app(app)
    migrate.init_app(app, db, directory=str(PROJECT_ROOT / "migrations"), render_as_batch=True)
    csrf.init_app(app)
    limiter.init_app(app)

    app.extensions[RUNTIME_KEY] = runtime
    app.extensions["nistchat_runtime_lock"] = threading.Lock()

    from . import web
    web.init_app(app)
    return app


def get_runtime(app: Flask):
    """The app's engine Runtime, created on first use (models and index load lazily inside it)."""
    runtime = app.extensions.get(RUNTIME_KEY)
    if runtime is None:
        with app.extensions["nistchat_runtime_lock"]:
            runtime = app.extensions.get(RUNTIME_KEY)
            if runtime is None:
                from .engine.runtime import Runtime
                runtime = Runtime(app.config["SETTINGS"])
                app.extensions[RUNTIME_KEY] = runtime
    return runtime

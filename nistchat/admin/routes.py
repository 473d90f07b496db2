"""`/admin`: login (password hash from config) and the questions_config editor with htmx partials,
validation on save, versions (list + restore) and refusal of saves made on an older version."""
from __future__ import annotations

import re
from urllib.parse import urlsplit

from flask import Blueprint, current_app, redirect, render_template, request, url_for
from sqlalchemy.exc import SQLAlchemyError

from ..auth import (admin_required, check_admin_password, end_admin_sessions, is_admin, login_throttle,
                    start_admin_session)
from ..extensions import limiter
from ..topics import questions
from ..web import clean_text, clean_tree, is_htmx
from .editor import Draft, error_paths
from .versions import get_version, list_versions, save_config

bp = Blueprint("admin", __name__, url_prefix="/admin")
UNSAFE_IN_NEXT = re.compile(r"[\x00-\x20\x7f-\x9f\\]")


def _safe_next(target: str | None) -> str:
    """Only a path on this site, so the login form cannot be used as an open redirect. Browsers
    drop tabs and newlines from a URL (`/\\t/evil.example/` becomes `//evil.example/`) and read a
    backslash as a slash, so a target with either, or with any control character or space, is
    refused; so is anything with a scheme or a host."""
    if not target or UNSAFE_IN_NEXT.search(target):
        return url_for("admin.index")
    parts = urlsplit(target)
    if target.startswith("/") and not target.startswith("//") and not parts.scheme and not parts.netloc:
        return target
    return url_for("admin.index")


@bp.get("")
def index():
    if not is_admin():
        configured = bool(current_app.config["SETTINGS"].web.admin_password_hash)
        return render_template("admin/login.html", configured=configured, next=request.args.get("next", ""))
    return render_template("admin/index.html")


@bp.post("/login")
@limiter.limit("10 per minute")
def login():
    web = current_app.config["SETTINGS"].web
    configured = bool(web.admin_password_hash)
    address = request.remote_addr or "unknown"
    throttle = login_throttle(current_app)
    form = dict(configured=configured, next=request.form.get("next", ""))
    wait = throttle.locked_for(address)
    if wait > 0:  # refused without checking the password, so guessing on gains nothing
        current_app.logger.warning("admin login refused: %s is locked out for %.0f s more", address, wait)
        return render_template("admin/login.html", locked_s=int(wait) + 1, **form), 429, \
            {"Retry-After": str(int(wait) + 1)}
    if not check_admin_password(request.form.get("password", "")):
        failures, lock_s = throttle.failed(address, web.login_lockout_after, web.login_lockout_s)
        current_app.logger.warning("admin login failed from %s (%d in a row%s)", address, failures,
                                   f"; locked out for {lock_s:.0f} s" if lock_s else "")
        return render_template("admin/login.html", failed=True, locked_s=int(lock_s), **form), 401
    throttle.succeeded(address)
    start_admin_session()
    return redirect(_safe_next(request.form.get("next")))


@bp.post("/logout")
def logout():
    end_admin_sessions()
    return redirect(url_for("chat.index"))


@bp.post("/logout-everywhere")
@admin_required
def logout_everywhere():
    """Revoke every admin login, on every browser (a lost laptop, a copied cookie)."""
    end_admin_sessions(everywhere=True)
    return redirect(url_for("chat.index"))


def live_config() -> dict:
    config, _sha = questions.load(current_app.config["SETTINGS"].questions_path)
    return config


def editor_response(draft: Draft, base_sha: str, *, errors=(), notice: str = "", status: int = 200,
                    raw: str | None = None, preview=None):
    context = dict(draft=draft, base_sha=base_sha, errors=list(errors), bad=error_paths(list(errors)),
                   notice=notice, versions=list_versions(), preview=preview,
                   raw=raw if raw is not None else questions.dumps(draft.to_config()))
    template = "admin/_editor.html" if is_htmx() else "admin/questions.html"
    return render_template(template, **context), status


@bp.get("/questions")
@admin_required
def questions_page():
    path = current_app.config["SETTINGS"].questions_path
    text = questions.read_text(path)
    config, errors = questions.parse(text)
    if errors:  # a hand-edited broken file: show why, start from the default
        config = live_config()
    return editor_response(Draft.from_config(config), questions.sha256(text),
                           errors=[f"The file on disk is invalid: {e}" for e in errors])


@bp.post("/questions/edit")
@admin_required
def edit():
    """Apply one editing operation to the posted draft and return the editor (nothing saved)."""
    draft = Draft.from_form(request.form)
    draft.apply(request.form.get("op", ""))
    return editor_response(draft, request.form.get("base_sha", ""))


@bp.post("/questions/preview")
@admin_required
def preview():
    draft = Draft.from_form(request.form)
    try:
        i, j = (int(x) for x in request.form.get("target", "").split(":"))
        topic = draft.categories[i].questions[j]
    except (ValueError, IndexError):
        topic = None
    return editor_response(draft, request.form.get("base_sha", ""), preview=topic)


@bp.post("/questions")
@admin_required
def save():
    base_sha = request.form.get("base_sha", "")
    raw = request.form.get("raw_json")
    if raw is not None:
        config, errors = questions.parse(raw)
        if config is not None:  # strip control characters, then check again (a label may now be empty)
            config = clean_tree(config)
            errors = errors or questions.validate(config)
        # The JSON form carries no structured fields: on a rejected text, the structured editor
        # shows the live config (an empty one would save "no topics" on its next Save).
        draft = Draft.from_config(config or live_config())
    else:
        draft = Draft.from_form(request.form)
        config = draft.to_config()
        errors = questions.validate(config)
    if errors:
        return editor_response(draft, base_sha, errors=errors, status=422, raw=raw,
                               notice="Nothing was saved: fix the problems listed.")
    try:
        version = save_config(config, base_sha, note=clean_text(request.form.get("note", ""))[:200] or "edited")
    except questions.StaleVersion as exc:
        return editor_response(draft, base_sha, errors=[str(exc)], status=409, raw=raw)
    except (OSError, SQLAlchemyError) as exc:
        current_app.logger.exception("questions_config save failed")
        return editor_response(draft, base_sha, status=500, raw=raw,
                               errors=[f"Nothing was saved: the server could not store it ({type(exc).__name__})."])
    return editor_response(Draft.from_config(config), version.sha256,
                           notice=f"Saved as version {version.version}. The chat page shows it now.")


@bp.post("/questions/restore/<int:number>")
@admin_required
def restore(number: int):
    version = get_version(number)
    base_sha = request.form.get("base_sha", "")
    if version is None:
        return editor_response(Draft.from_config(live_config()), base_sha, errors=[f"There is no version {number}."],
                               status=404)
    # Version 1 keeps the file as it was before the first save, which may be a broken hand edit.
    config, errors = questions.parse(version.content)
    if errors:
        return editor_response(Draft.from_config(live_config()), base_sha, status=422,
                               errors=[f"Version {number} cannot be restored: {e}" for e in errors])
    try:
        saved = save_config(config, base_sha, note=f"restored version {number}")
    except questions.StaleVersion as exc:
        return editor_response(Draft.from_config(config), base_sha, errors=[str(exc)], status=409)
    except (OSError, SQLAlchemyError) as exc:
        current_app.logger.exception("questions_config restore failed")
        return editor_response(Draft.from_config(live_config()), base_sha, status=500,
                               errors=[f"Nothing was restored: the server could not store it ({type(exc).__name__})."])
    return editor_response(Draft.from_config(config), saved.sha256,
                           notice=f"Restored version {number} as version {saved.version}.")

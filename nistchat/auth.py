"""Who is asking: an anonymous per-browser owner id (session cookie) and the admin flag.

There are no user accounts on this LAN app: a browser sees its own conversations and logs; an
admin (password hash from config) sees everyone's and edits the topic questions.
"""
from __future__ import annotations

import functools
import uuid

from flask import abort, current_app, redirect, request, session, url_for
from werkzeug.security import check_password_hash


def owner_id() -> str:
    """This browser's id, created on first visit and kept in the (signed, HttpOnly) session."""
    if "owner" not in session:
        session["owner"] = uuid.uuid4().hex
        session.permanent = True
    return session["owner"]


def is_admin() -> bool:
    return bool(session.get("admin"))


def check_admin_password(password: str) -> bool:
    stored = current_app.config["SETTINGS"].web.admin_password_hash
    if not stored or not password:
        return False
    try:
        return check_password_hash(stored, password)
    except (ValueError, TypeError):  # a malformed hash in config never grants access
        return False


def admin_required(view):
    """Pages redirect anonymous users to the login form; htmx/API callers get a plain 403."""
    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        if not is_admin():
            if request.method == "GET" and not request.headers.get("HX-Request") \
                    and not request.path.startswith("/api/"):
                return redirect(url_for("admin.index", next=request.full_path))
            abort(403)
        return view(*args, **kwargs)
    return wrapped

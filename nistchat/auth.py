"""Who is asking: an anonymous per-browser owner id (session cookie) and the admin login.

There are no user accounts on this LAN app: a browser sees its own conversations and logs; an
admin (password hash from config) sees everyone's and edits the topic questions. An admin login
is held on the server (models.AdminSession): the cookie carries only a random token, so logout
revokes it for every copy of the cookie, and idle and absolute limits end it. Failed logins are
logged, and an address that keeps failing is locked out for a time that doubles each failure.
"""
from __future__ import annotations

import functools
import hashlib
import secrets
import threading
import time
import uuid
from datetime import timedelta

from flask import Flask, abort, current_app, g, redirect, request, session, url_for
from werkzeug.security import check_password_hash

from .extensions import db
from .models import AdminSession, utcnow

TOUCH_EVERY = timedelta(seconds=60)  # last_seen_at is written at most this often per session
MAX_LOCKOUT_S = 3600.0


def owner_id() -> str:
    """This browser's id, created on first visit and kept in the (signed, HttpOnly) session."""
    if "owner" not in session:
        session["owner"] = uuid.uuid4().hex
        session.permanent = True
    return session["owner"]


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _live_admin_session() -> AdminSession | None:
    """This browser's admin session if it is neither revoked, idle too long, nor too old."""
    token = session.get("admin")
    if not isinstance(token, str) or not token:  # a pre-0005 cookie said `admin: true`: not enough
        return None
    row = db.session.get(AdminSession, _digest(token))
    web = current_app.config["SETTINGS"].web
    now = utcnow()
    if row is None or row.revoked_at is not None \
            or now - row.last_seen_at > timedelta(minutes=web.admin_idle_minutes) \
            or now - row.created_at > timedelta(hours=web.admin_lifetime_hours):
        return None
    if now - row.last_seen_at > TOUCH_EVERY:
        row.last_seen_at = now
        db.session.commit()  # at the start of the request (app.py asks first), nothing else is pending
    return row


def is_admin() -> bool:
    """Checked against the server once per request, then remembered in `g`."""
    if "is_admin" not in g:
        g.is_admin = _live_admin_session() is not None
        if not g.is_admin and "admin" in session:
            session.pop("admin")
    return g.is_admin


def start_admin_session() -> None:
    token = secrets.token_urlsafe(32)
    db.session.add(AdminSession(id=_digest(token), address=(request.remote_addr or "")[:64]))
    db.session.commit()
    session["admin"] = token
    session.permanent = True
    g.is_admin = True


def end_admin_sessions(everywhere: bool = False) -> int:
    """Revoke this browser's admin session, or with `everywhere` every open one; how many."""
    token = session.pop("admin", None)
    g.is_admin = False
    query = AdminSession.query.filter(AdminSession.revoked_at.is_(None))
    if not everywhere:
        if not isinstance(token, str):
            return 0
        query = query.filter(AdminSession.id == _digest(token))
    revoked = query.update({"revoked_at": utcnow()}, synchronize_session=False)
    db.session.commit()
    return revoked


class LoginThrottle:
    """Failed admin logins per client address: after `after` failures in a row the address is
    locked out for `base_s`, doubled with each further failure (at most an hour); a success
    clears it. In memory: one waitress process serves the site."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, tuple[int, float]] = {}  # address -> (failures in a row, locked until)

    def locked_for(self, address: str) -> float:
        with self._lock:
            _count, until = self._failures.get(address, (0, 0.0))
            return max(0.0, until - self.clock())

    def failed(self, address: str, after: int, base_s: float) -> tuple[int, float]:
        """Record a failure; (failures in a row, seconds locked out now)."""
        with self._lock:
            count = self._failures.get(address, (0, 0.0))[0] + 1
            lock_s = min(MAX_LOCKOUT_S, base_s * 2 ** (count - after)) if count >= after else 0.0
            self._failures[address] = (count, self.clock() + lock_s)
            return count, lock_s

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)


def login_throttle(app: Flask) -> LoginThrottle:
    return app.extensions.setdefault("nistchat_login_throttle", LoginThrottle())


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

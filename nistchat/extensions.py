"""Flask extensions created unbound and attached in create_app (the init_app pattern), so tests
can build many apps in one process; and the app's engine Runtime, which is an extension too."""
from __future__ import annotations

import threading

from flask import Flask

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    """The models' base: SQLAlchemy 2.0's typed declarative (Mapped[...] / mapped_column)."""


db = SQLAlchemy(model_class=Base)
migrate = Migrate()
csrf = CSRFProtect()
limiter = Limiter(key_func=get_remote_address, storage_uri="memory://")

RUNTIME_KEY = "nistchat_runtime"
_runtime_lock = threading.Lock()


def app_runtime(app: Flask):
    """The app's engine Runtime, created on first use (models and index load lazily inside it)."""
    runtime = app.extensions.get(RUNTIME_KEY)
    if runtime is None:
        with _runtime_lock:
            runtime = app.extensions.get(RUNTIME_KEY)
            if runtime is None:
                from .engine import Runtime
                runtime = Runtime(app.config["SETTINGS"])
                app.extensions[RUNTIME_KEY] = runtime
    return runtime


@event.listens_for(Engine, "connect")
def _sqlite_pragmas(dbapi_connection, _record) -> None:
    """WAL lets readers run while an answer is being written; busy_timeout makes two answers that
    finish at once wait for each other instead of failing with "database is locked"."""
    module = type(dbapi_connection).__module__
    if not module.startswith("sqlite3"):
        return
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=15000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()

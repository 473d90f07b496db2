"""Flask extensions created unbound and attached in create_app (the init_app pattern), so tests
can build many apps in one process; and the app's engine Runtime, which is an extension too."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from flask import Flask

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect
from sqlalchemy.orm import DeclarativeBase

if TYPE_CHECKING:
    from .database import Database


class Base(DeclarativeBase):
    """The models' base: SQLAlchemy 2.0's typed declarative (Mapped[...] / mapped_column)."""


db = SQLAlchemy(model_class=Base)
migrate = Migrate()
csrf = CSRFProtect()
limiter = Limiter(key_func=get_remote_address, storage_uri="memory://")

RUNTIME_KEY = "nistchat_runtime"
DATABASE_KEY = "nistchat_database"
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


def app_database(app: Flask) -> Database:
    """The app's engine specifics (database.Database), chosen from database_url in create_app."""
    return app.extensions[DATABASE_KEY]

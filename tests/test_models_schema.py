"""The models (SQLAlchemy 2.0 Mapped/mapped_column) describe exactly the schema the Alembic
migrations build: autogenerate, run against a freshly upgraded SQLite file and PostgreSQL
database, finds nothing to do."""
from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import MetaData, String

from nistchat.database import hand_made
from nistchat.extensions import db

pytestmark = pytest.mark.both_engines


def _not_search(name, _type, _parent_names) -> bool:
    """The search objects (0002's FTS5 tables, 0007's tsvector column and index) are no model's."""
    return not hand_made(name)


def schema_diff(app, metadata) -> list:
    with app.app_context(), db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True,
                                                         "include_name": _not_search})
        return compare_metadata(context, metadata)


def test_models_match_the_migrated_database(app):
    assert schema_diff(app, db.metadata) == []


def test_the_comparison_sees_a_changed_column(app):
    """The check above is not vacuous: a model that drifts from the migrations shows up."""
    drifted = MetaData()
    for table in db.metadata.tables.values():
        table.to_metadata(drifted)
    drifted.tables["message"].c.risk.type = String(9)
    drifted.tables["conversation"].c.title.nullable = True
    drifted.tables["message"].c.attempts.server_default = None
    diff = repr(schema_diff(app, drifted))
    assert "risk" in diff and "title" in diff and "attempts" in diff

"""`nistchat db upgrade|downgrade|current|history`: Flask-Migrate (Alembic) on the app's SQLite
database, without needing FLASK_APP set."""
from __future__ import annotations

import click

from ..config import ConfigError


def make_app():
    from ..app import create_app
    try:
        return create_app()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


@click.group()
def db() -> None:
    """Database migrations (instance/nistchat.sqlite3)."""


@db.command("upgrade")
@click.argument("revision", default="head")
def upgrade_command(revision: str) -> None:
    """Apply migrations up to REVISION (default: head)."""
    from ..app import upgrade_database
    app = make_app()
    upgrade_database(app, revision)
    click.echo(f"database: {app.config['SETTINGS'].db_path} at {revision}")


@db.command("downgrade")
@click.argument("revision", default="-1")
def downgrade_command(revision: str) -> None:
    """Revert migrations down to REVISION (default: one step)."""
    from flask_migrate import downgrade
    app = make_app()
    with app.app_context():
        downgrade(revision=revision)


@db.command("current")
def current_command() -> None:
    """Show the database's current revision."""
    from flask_migrate import current
    app = make_app()
    with app.app_context():
        current()


@db.command("history")
def history_command() -> None:
    """List the migrations."""
    from flask_migrate import history
    app = make_app()
    with app.app_context():
        history()

"""`nistchat db upgrade|downgrade|current|history`: Flask-Migrate (Alembic) on the app's database
(SQLite or PostgreSQL: `database_url`), without needing FLASK_APP set; `nistchat db backup|restore`."""
from __future__ import annotations

import click

from pathlib import Path

from ..config import ConfigError


def make_app():
    from ..app import create_app
    try:
        return create_app()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


@click.group()
def db() -> None:
    """Database migrations, backup and restore (database_url; default instance/nistchat.sqlite3)."""


@db.command("upgrade")
@click.argument("revision", default="head")
def upgrade_command(revision: str) -> None:
    """Apply migrations up to REVISION (default: head); a database with data is backed up first."""
    from ..app import upgrade_database
    from ..extensions import app_database
    app = make_app()
    backup = upgrade_database(app, revision, backup_dir=app.config["SETTINGS"].backup_dir)
    if backup is not None:
        click.echo(f"database: backed up to {backup} before upgrading")
    click.echo(f"database: {app_database(app).describe()} at {revision}")


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


@db.command("backup")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def backup_command(path: Path) -> None:
    """Write a consistent copy of the database to PATH while the server runs (SQLite: the online
    backup API; PostgreSQL: pg_dump's custom format)."""
    from ..database import DatabaseError
    from ..extensions import app_database, db as sqla
    app = make_app()
    database = app_database(app)
    with app.app_context():
        try:
            database.backup(sqla.engine, path)
        except DatabaseError as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(f"backup of {database.describe()} written to {path} ({path.stat().st_size:,} bytes)")


@db.command("restore")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--yes", is_flag=True, help="Do not ask before replacing the database's contents.")
def restore_command(path: Path, yes: bool) -> None:
    """Replace the database's contents with the backup at PATH (made by `nistchat db backup`).
    Stop the server first; `nistchat serve` then upgrades the restored database if it is older."""
    from ..app import database_revisions
    from ..database import DatabaseError
    from ..extensions import app_database, db as sqla
    app = make_app()
    database = app_database(app)
    if not yes:
        click.confirm(f"Replace everything in {database.describe()} with {path}?", abort=True)
    with app.app_context():
        try:
            database.restore(sqla.engine, path)
        except DatabaseError as exc:
            raise click.ClickException(str(exc)) from None
    current, head = database_revisions(app)
    note = "" if current == head else f" (`nistchat db upgrade` or `nistchat serve` brings it to {head})"
    click.echo(f"restored {database.describe()} from {path}: at revision {current}{note}")

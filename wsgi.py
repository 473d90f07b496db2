"""WSGI entry point for any WSGI server (`waitress-serve wsgi:app`, gunicorn, ...). Like
`nistchat serve`, it brings the database schema up to date before the first request (on a fresh
instance every page would otherwise fail on missing tables)."""
from nistchat.app import create_app, startup_warnings, upgrade_database

app = create_app()
upgrade_database(app, backup_dir=app.config["SETTINGS"].backup_dir)
for warning in startup_warnings(app.config["SETTINGS"]):
    app.logger.warning(warning)

"""WSGI entry point for any WSGI server (`waitress-serve wsgi:app`, gunicorn, ...).
`nistchat serve` is the supported way: it also upgrades the database first."""
from nistchat import create_app

app = create_app()

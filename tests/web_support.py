"""Helpers for the web tests; their fixtures (app, client, runner, light_runtime) are in conftest.py.

The app gets a real SQLite file in a temp instance dir, or in modules marked `both_engines` a real
PostgreSQL database as well (conftest.py), migrated with the real migrations, and a real engine
Runtime. Route tests use `light_runtime` (no index build, no model load: they ask
direct-answer topics or hit errors before any model); tests that need a real answer use the
session `runtime` (real index, real 0.5B reader) and are kept few, since each costs ~10-30 s.
"""
from __future__ import annotations

import contextlib
import json
import re
import threading
import time

from werkzeug.security import generate_password_hash

from nistchat.app import create_app
from nistchat.app import upgrade_database
from nistchat.chat.shared import close as close_app

from .conftest import make_settings

ADMIN_PASSWORD = "correct horse battery staple"
ADMIN_HASH = generate_password_hash(ADMIN_PASSWORD)
HX = {"HX-Request": "true"}
DIRECT_LABEL = "Which documents can I ask about?"  # a {label, answer} topic in the default config
PROMPT_LABEL = "What is confabulation?"  # a {label, prompt} topic in the default config


def build_app(tmp_path, runtime, database_url: str = "", **config):
    """An app over a fresh database: the SQLite file in tmp_path's instance dir, or `database_url`
    (the `database_url` fixture gives a fresh PostgreSQL database)."""
    overrides = config.pop("settings", {})
    if database_url:
        overrides = {**overrides, "database_url": database_url}
    settings = make_settings(tmp_path, admin_password_hash=ADMIN_HASH, **overrides)
    app = create_app({"SETTINGS": settings, "RUNTIME": runtime, **config})
    upgrade_database(app)
    _BUILT.append(app)
    return app


_BUILT: list = []  # the apps built in this test: closed before its database goes to the next test


def close_apps() -> None:
    """Stop every app built in this test from writing to its database (`shared.close`): an answer
    mirror still running after the test would write into the next test's database, or into a
    server already stopped."""
    while _BUILT:
        close_app(_BUILT.pop())


def _app(app_or_client):
    return getattr(app_or_client, "application", app_or_client)


def stored(app_or_client, model, key):
    """A row as the database has it now, read in its own app context (never hold one across
    requests: requests would share its `g` and database session)."""
    from nistchat.extensions import db
    with _app(app_or_client).app_context():
        row = db.session.get(model, key)
        if row is not None:
            db.session.expunge(row)
        return row


def count(app_or_client, model) -> int:
    from nistchat.extensions import db
    with _app(app_or_client).app_context():
        return db.session.query(model).count()


def csrf_token(client, path: str = "/") -> str:
    html = client.get(path).get_data(as_text=True)
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, f"no CSRF token on {path}"
    return match.group(1)


def post(client, path: str, data: dict | None = None, *, htmx: bool = False, token_from: str = "/", **kwargs):
    data = dict(data or {})
    data.setdefault("csrf_token", csrf_token(client, token_from))
    return client.post(path, data=data, headers=HX if htmx else None, **kwargs)


def message_id(html: str) -> int:
    match = re.search(r'data-message-id="(\d+)"', html)
    assert match, html[:500]
    return int(match.group(1))


def sse_events(body: str) -> list[tuple[str, str]]:
    """(event, data) pairs from an SSE body, as EventSource would dispatch them."""
    events = []
    for block in body.split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
        if data:
            events.append((name, "\n".join(data)))
    return events


def ask_and_stream(client, question: str, *, topic: bool = False) -> tuple[int, list[tuple[str, str]]]:
    response = post(client, "/ask", {"question": question, **({"topic": "1"} if topic else {})}, htmx=True)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    mid = message_id(response.get_data(as_text=True))
    body = client.get(f"/ask/stream/{mid}").get_data(as_text=True)
    return mid, sse_events(body)


def login(client) -> None:
    response = post(client, "/admin/login", {"password": ADMIN_PASSWORD}, token_from="/admin")
    assert response.status_code == 302, response.get_data(as_text=True)[:300]


def wait_for(predicate, timeout: float = 30.0, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("condition not met in time")


def ndjson(body: str) -> list[dict]:
    return [json.loads(line) for line in body.splitlines() if line.strip()]


# -- a live server (waitress on loopback) seen through httpx, as a browser or script sees it
@contextlib.contextmanager
def running(server):
    """A waitress server's loop in a thread of its own, stopped from inside that loop: closed from
    here while the loop waited in select(), its socket raised EBADF in the loop's thread."""
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.trigger.pull_trigger(server._map.clear)  # an empty map ends the loop
        thread.join(10)
        server.close()


@contextlib.contextmanager
def served(app):
    """The app served by waitress on a free loopback port, and an httpx client for it."""
    import httpx
    from waitress import create_server

    with running(create_server(app, host="127.0.0.1", port=0, threads=8, channel_timeout=300)) as server, \
            httpx.Client(base_url=f"http://127.0.0.1:{server.effective_port}", timeout=300) as client:
        yield client


def admin_status(client) -> dict:
    """/status as an admin sees it (anonymous callers get only ready/degraded)."""
    page = client.get("/admin").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    client.post("/admin/login", data={"password": ADMIN_PASSWORD, "csrf_token": token})
    return client.get("/status", params={"format": "json"}).json()


def ask(client, question: str, on_token=None, events: list | None = None) -> list[dict]:
    events = [] if events is None else events
    with client.stream("POST", "/api/ask", json={"question": question}) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if not line.strip():
                continue
            event = json.loads(line)
            events.append(event)
            if event["type"] == "token" and on_token:
                on_token(event)
    return events

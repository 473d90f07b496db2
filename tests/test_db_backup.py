"""`nistchat db backup PATH` and `nistchat db restore PATH` on SQLite (the online backup API) and
on a real PostgreSQL server (pg_dump / psql): a backup taken while another thread keeps writing
is one consistent moment (every conversation with all of its messages, the search index
matching the rows), and restoring it brings exactly that moment back, searchable and writable.
A file that is not a backup of this engine is refused and changes nothing."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from nistchat.app import database_revisions
from nistchat.cli import main
from nistchat.extensions import db
from nistchat.history import search
from nistchat.models import Conversation, Message

from .web_support import build_app

pytestmark = pytest.mark.both_engines

PER_CONVERSATION = 3


def cli(app, *args: str):
    """`nistchat ARGS` against the app's own instance dir and database, as an operator runs it."""
    settings = app.config["SETTINGS"]
    env = {"NISTCHAT_INSTANCE_DIR": str(settings.instance_dir), "NISTCHAT_DATABASE_URL": settings.database_url,
           "NISTCHAT_SECRET_KEY": "test"}
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


class Writer(threading.Thread):
    """Writes conversations of PER_CONVERSATION messages, one transaction each, until stopped."""

    def __init__(self, app):
        super().__init__(daemon=True)
        self.app, self.stop, self.written, self.error = app, threading.Event(), 0, None

    def run(self):
        try:
            with self.app.app_context():
                while not self.stop.is_set():
                    n = self.written
                    conv = Conversation(owner="writer", title=f"conversation {n}")
                    db.session.add_all([conv] + [Message(conversation=conv, owner="writer", status="done",
                                                         question=f"question {n}.{i} about lemurs",
                                                         answer=f"answer {n}.{i}") for i in range(PER_CONVERSATION)])
                    db.session.commit()
                    self.written += 1
        except Exception as exc:  # reported by the test
            self.error = exc


def snapshot(app, per: int = PER_CONVERSATION) -> tuple[int, int, int]:
    """(conversations, messages, search hits for a word every message has), checking that each
    conversation has all its messages: a torn copy would show a conversation without them."""
    with app.test_request_context("/"):
        convs = Conversation.query.all()
        assert all(len(c.messages) == per for c in convs), "a conversation lost messages"
        messages = Message.query.count()
        _hits, total = search.search("lemurs", None, 1, 1)
        db.session.remove()
        return len(convs), messages, total


def test_a_backup_taken_while_writing_restores_that_moment(tmp_path, light_runtime, database_url):
    app = build_app(tmp_path, light_runtime, database_url=database_url)
    writer = Writer(app)
    writer.start()
    try:
        while writer.written < 5 and writer.is_alive():
            threading.Event().wait(0.02)
        path = tmp_path / "backups" / "site.backup"
        result = cli(app, "db", "backup", str(path))
        assert result.exit_code == 0, result.output
        assert "written to" in result.output and path.stat().st_size > 0
        during = writer.written
    finally:
        writer.stop.set()
        writer.join(30)
    assert writer.error is None, writer.error
    assert writer.written > during >= 5  # the writer went on while the backup ran
    after = snapshot(app)
    assert after == (writer.written, writer.written * PER_CONVERSATION, writer.written * PER_CONVERSATION)

    result = cli(app, "db", "restore", "--yes", str(path))
    assert result.exit_code == 0, result.output
    assert f"at revision {database_revisions(app)[1]}" in result.output  # the head, where the backup was taken
    convs, messages, hits = snapshot(app)
    assert 5 <= convs <= writer.written and messages == hits == convs * PER_CONVERSATION
    assert convs < writer.written or writer.written == during  # the rows written after the backup are gone

    with app.app_context():  # the restored database takes new rows (keys and sequences restored too)
        conv = Conversation(owner="later", title="after restore")
        db.session.add_all([conv, Message(conversation=conv, owner="later", question="restored marmots?",
                                          answer="yes", status="done")])
        db.session.commit()
    with app.test_request_context("/"):
        assert search.search("marmots", "later", 1, 5)[1] == 1


def test_a_file_that_is_not_a_backup_is_refused_and_changes_nothing(tmp_path, light_runtime, database_url):
    app = build_app(tmp_path, light_runtime, database_url=database_url)
    with app.app_context():
        conv = Conversation(owner="o", title="kept")
        db.session.add_all([conv, Message(conversation=conv, owner="o", question="kept lemurs", status="done")])
        db.session.commit()
    before = snapshot(app, per=1)
    junk = tmp_path / "junk.backup"
    junk.write_text("not a database\n", encoding="utf-8")
    result = cli(app, "db", "restore", "--yes", str(junk))
    assert result.exit_code == 1 and "is not a" in result.output and "backup" in result.output
    assert snapshot(app, per=1) == before == (1, 1, 1)


def test_a_backup_of_the_other_engine_is_refused(tmp_path, light_runtime, database_url, db_engine):
    app = build_app(tmp_path, light_runtime, database_url=database_url)
    other = tmp_path / "other.backup"
    other.write_bytes(b"PGDMP\x01\x0e\x00" if db_engine == "sqlite" else b"SQLite format 3\x00" + bytes(100))
    result = cli(app, "db", "restore", "--yes", str(other))
    said = "is not an SQLite backup" if db_engine == "sqlite" else "is not a PostgreSQL backup"
    assert result.exit_code == 1 and said in result.output

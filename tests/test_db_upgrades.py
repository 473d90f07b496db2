"""Upgrades lose nothing: a database is built at each earlier revision with the real migrations,
filled with rows valid at that revision (conversations, messages with sources, audits, timings,
eval runs and items, admin sessions, questions_config versions: only the columns that revision
has), upgraded to head, and every row, every value and every search hit is still there. A
database with data is backed up before its upgrade. On SQLite and on PostgreSQL."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from nistchat.app import create_app, database_revisions, holds_data, upgrade_database
from nistchat.extensions import db
from nistchat.history import search
from nistchat.models import Message

from .conftest import make_settings

pytestmark = pytest.mark.both_engines

def _revisions() -> list[str]:
    from alembic.script import ScriptDirectory

    from nistchat.app import PACKAGE_DIR
    script = ScriptDirectory(str(PACKAGE_DIR / "migrations"))
    return [r.revision for r in reversed(list(script.walk_revisions()))]


*EARLIER, HEAD = _revisions()  # every revision before head, oldest first
T0 = datetime(2026, 5, 4, 3, 2, 1)
T1 = datetime(2026, 5, 4, 3, 2, 9, 250000)

SOURCES = [{"rank": 1, "id": "p1", "doc": "NIST.AI.100-1", "title": "AI RMF 1.0", "section": ["GOVERN", "1.1"],
            "text": "Legal and regulatory requirements involving AI are understood.", "score": 0.82}]
VERDICTS = [{"text": "GOVERN is cross-cutting.", "supported": True, "passage": 1}]
AUDIT = {"trust": 0.5, "label": "partly supported", "sentences": [{"text": "A claim.", "supported": False}]}

# Rows as they would be at head; each revision gets the columns it has (the later ones get their
# server defaults or NULL, checked in NEW_COLUMN_VALUES). Integer keys are left to the database.
ROWS: dict[str, list[dict]] = {
    "conversation": [
        {"id": "c" * 32, "owner": "owner-a", "title": "What does GOVERN cover?", "created_at": T0, "updated_at": T1},
        {"id": "d" * 32, "owner": "owner-b", "title": "Topic: confabulation", "created_at": T0, "updated_at": T0},
    ],
    "message": [
        {"conversation_id": "c" * 32, "owner": "owner-a", "created_at": T0, "finished_at": T1, "status": "done",
         "question": "What does GOVERN cover for zebrafish?", "label": None, "prompt": "What does GOVERN cover?",
         "direct_answer": None, "answer": "GOVERN cultivates a quokka culture of risk management [1].",
         "refused": False, "risk": "HIGH", "disclaimer": "Check the source.", "verdicts": VERDICTS, "retried": True,
         "retry_reason": "uncited", "sources": SOURCES, "backend": {"reader": "embedded:qwen2.5-coder-0.5b"},
         "error_kind": None, "error": None, "incomplete": False, "total_ms": 1234.5, "attempts": 1,
         "docs": ["NIST.AI.100-1"], "kind": "chat", "audit": None, "searched_for": "what GOVERN covers"},
        {"conversation_id": "d" * 32, "owner": "owner-b", "created_at": T1, "finished_at": None, "status": "error",
         "question": "Topic button wombat", "label": "Labelled axolotl", "prompt": "Full prompt text",
         "direct_answer": None, "answer": "partial narwhal answer", "refused": False, "risk": "LOW",
         "disclaimer": None, "verdicts": None, "retried": False, "retry_reason": None, "sources": [],
         "backend": None, "error_kind": "reader", "error": "reader process exited", "incomplete": True,
         "total_ms": None, "attempts": 2, "docs": [], "kind": "chat", "audit": None},
        {"conversation_id": "c" * 32, "owner": "owner-a", "created_at": T1, "finished_at": T1, "status": "done",
         "question": "Pasted answer about pangolins", "label": None, "prompt": None, "direct_answer": None,
         "answer": "Trust 50 % for the capybara claim", "refused": True, "risk": None, "disclaimer": None,
         "verdicts": [], "retried": False, "retry_reason": None, "sources": SOURCES, "backend": None,
         "error_kind": None, "error": None, "incomplete": False, "total_ms": 88.0, "attempts": 0, "docs": None,
         "kind": "audit", "audit": AUDIT},
    ],
    "timing": [{"message_id": 1, "stage": "retrieve", "ms": 120.5}, {"message_id": 1, "stage": "generate", "ms": 900.0},
               {"message_id": 2, "stage": "retrieve", "ms": 80.0}],
    "eval_run": [{"kind": "retrieval", "started_at": T0, "finished_at": T1, "config": {"k": 6, "backends": ["bm25"]},
                  "metrics": {"recall@6": 0.9}, "note": "nightly", "status": "done", "done": 2, "total": 2,
                  "sets": "dev"},
                 {"kind": "answers", "started_at": T1, "finished_at": None, "config": None, "metrics": None,
                  "note": None, "status": "interrupted", "done": 1, "total": 5, "sets": "my-questions"}],
    "eval_item": [{"run_id": 1, "question_id": "dev-001", "question": "A retrieval question", "expected": ["p1"],
                   "result": {"ranks": [1]}, "passed": True, "ms": 31.5, "set_name": "dev", "category": "definition"},
                  {"run_id": 2, "question_id": None, "question": "An answer question", "expected": None,
                   "result": None, "passed": None, "ms": None, "set_name": None, "category": None}],
    "config_version": [{"version": 1, "sha256": "a" * 64, "content": '{"categories": []}', "saved_at": T0,
                        "note": "first"},
                       {"version": 2, "sha256": "b" * 64, "content": '{"categories": [{"name": "x"}]}',
                        "saved_at": T1, "note": "edited"}],
    "admin_session": [{"id": "e" * 64, "created_at": T0, "last_seen_at": T1, "revoked_at": None,
                       "address": "127.0.0.1"},
                      {"id": "f" * 64, "created_at": T0, "last_seen_at": T0, "revoked_at": T1, "address": "::1"}],
}
# What a column added after the database's revision holds once upgraded.
NEW_COLUMN_VALUES = {("message", "attempts"): 0, ("message", "kind"): "chat", ("eval_run", "status"): "done",
                     ("eval_run", "done"): 0, ("eval_run", "total"): 0}
# Each message's words: one from its shown question (label, else question), one from its answer.
SEARCH_WORDS = {1: ("zebrafish", "quokka"), 2: ("axolotl", "narwhal"), 3: ("pangolins", "capybara")}


def key_of(table: sa.Table) -> sa.Column:
    return list(table.primary_key.columns)[0]


def fill(app) -> dict[str, list[dict]]:
    """ROWS, each with the columns the database's revision has; what was written, by table."""
    written = {}
    with app.app_context(), db.engine.begin() as conn:
        names = set(sa.inspect(conn).get_table_names())
        meta = sa.MetaData()
        meta.reflect(conn, only=[name for name in ROWS if name in names])
        for name in ROWS:
            if name not in meta.tables:
                continue  # admin_session came with 0006
            table = meta.tables[name]
            rows = [{k: v for k, v in row.items() if k in table.c} for row in ROWS[name]]
            for row in rows:  # one by one: integer keys 1, 2, 3 in order on both engines
                conn.execute(table.insert(), row)
            written[name] = rows
    return written


def read_all(app, name: str) -> list[dict]:
    table = db.metadata.tables[name]
    with app.app_context(), db.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.select(table).order_by(key_of(table)))]


def site(tmp_path: Path, runtime, database_url: str):
    settings = make_settings(tmp_path, database_url=database_url) if database_url else make_settings(tmp_path)
    return create_app({"SETTINGS": settings, "RUNTIME": runtime})


@pytest.mark.parametrize("start", EARLIER)
def test_an_upgrade_from_each_earlier_revision_keeps_every_row_and_search_hit(tmp_path, light_runtime,
                                                                               blank_database_url, start):
    app = site(tmp_path, light_runtime, blank_database_url)
    upgrade_database(app, start)
    assert database_revisions(app) == (start, HEAD)
    written = fill(app)
    assert holds_data(app) and set(written) == set(ROWS) - ({"admin_session"} if start < "0006" else set())

    backup = upgrade_database(app, backup_dir=tmp_path / "backups")
    assert database_revisions(app) == (HEAD, HEAD)
    assert backup is not None and backup.is_file() and backup.stat().st_size > 0 and start in backup.name

    for name, rows in written.items():
        now = read_all(app, name)
        assert len(now) == len(rows), name
        for i, (before, after) in enumerate(zip(rows, now), start=1):
            assert after.pop(key_of(db.metadata.tables[name]).name) == before.get("id", i), name
            kept = {k: after[k] for k in before if k != "id"}
            assert kept == {k: v for k, v in before.items() if k != "id"}, (name, i)
            for column, value in after.items():
                if column not in before:
                    assert value == NEW_COLUMN_VALUES.get((name, column)), (name, column)

    with app.test_request_context("/"):
        for mid, words in SEARCH_WORDS.items():
            owner = ROWS["message"][mid - 1]["owner"]
            for word in words:
                hits, total = search.search(word, None, 1, 10)
                assert total == 1 and [h.message_id for h in hits] == [mid], (word, start)
                assert search.search(word[:5], owner, 1, 10)[1] == 1, (word, owner)  # a prefix, in its owner's scope
        # the upgraded database takes new rows (PostgreSQL's sequences were kept) and indexes them
        added = Message(conversation_id="c" * 32, owner="owner-a", question="After the upgrade: ocelot?",
                        answer="ocelot answer", status="done")
        db.session.add(added)
        db.session.commit()
        assert added.id == len(ROWS["message"]) + 1
        assert [h.message_id for h in search.search("ocelot", "owner-a", 1, 10)[0]] == [added.id]


def test_a_database_without_data_is_upgraded_without_a_backup(tmp_path, light_runtime, blank_database_url):
    app = site(tmp_path, light_runtime, blank_database_url)
    upgrade_database(app, "0005")
    assert not holds_data(app)
    assert upgrade_database(app, backup_dir=tmp_path / "backups") is None
    assert not (tmp_path / "backups").exists() and database_revisions(app) == (HEAD, HEAD)
    assert upgrade_database(app, backup_dir=tmp_path / "backups") is None  # nothing to do: no backup either


@pytest.mark.parametrize("db_engine", ["sqlite"], indirect=True)
def test_a_search_index_filled_by_fts5_rebuild_is_repaired(tmp_path, light_runtime, blank_database_url):
    """Databases that ran the first 0002 had their index filled by FTS5's 'rebuild', which reads
    `question` where the triggers write the label: labelled messages were found by the wrong
    words. 0007 fills the index again from the shown question."""
    app = site(tmp_path, light_runtime, blank_database_url)
    upgrade_database(app, "0006")
    fill(app)
    with app.app_context(), db.engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO message_fts(message_fts) VALUES ('rebuild')"))
    with app.test_request_context("/"):
        assert search.search("axolotl", None, 1, 10)[1] == 0 and search.search("wombat", None, 1, 10)[1] == 1
    upgrade_database(app)
    with app.test_request_context("/"):
        assert [h.message_id for h in search.search("axolotl", None, 1, 10)[0]] == [2]
        assert search.search("wombat", None, 1, 10)[1] == 0  # the question behind a label is not shown
        message = db.session.get(Message, 2)
        message.answer = "final dolphin answer"  # the trigger's delete now removes what the index holds
        db.session.commit()
        assert [h.message_id for h in search.search("dolphin axolotl", None, 1, 10)[0]] == [2]
        assert search.search("narwhal", None, 1, 10)[1] == 0
        with db.engine.connect() as conn:
            conn.execute(sa.text("INSERT INTO message_fts(message_fts) VALUES ('integrity-check')"))  # the index's own


def test_the_upgrade_command_backs_up_first_and_the_backup_restores_the_old_revision(tmp_path, light_runtime,
                                                                                     blank_database_url):
    """What `make run` does before serving (serve and `db upgrade` share upgrade_database), then
    the way back: the backup restores the database as it was before the upgrade."""
    from click.testing import CliRunner

    from nistchat.cli import main

    app = site(tmp_path, light_runtime, blank_database_url)
    upgrade_database(app, "0005")
    written = fill(app)
    env = {"NISTCHAT_INSTANCE_DIR": str(tmp_path / "instance"), "NISTCHAT_DATABASE_URL": blank_database_url,
           "NISTCHAT_SECRET_KEY": "test"}
    result = CliRunner().invoke(main, ["db", "upgrade"], env=env, catch_exceptions=False)
    assert result.exit_code == 0 and "backed up to" in result.output, result.output
    (backup,) = (tmp_path / "instance" / "backups").iterdir()
    assert database_revisions(app)[0] == HEAD

    result = CliRunner().invoke(main, ["db", "restore", "--yes", str(backup)], env=env, catch_exceptions=False)
    assert result.exit_code == 0 and "at revision 0005" in result.output and f"brings it to {HEAD}" in result.output
    assert database_revisions(app)[0] == "0005"
    upgrade_database(app)
    assert [len(read_all(app, name)) for name in written] == [len(rows) for rows in written.values()]
    with app.test_request_context("/"):
        assert [h.message_id for h in search.search("axolotl", None, 1, 10)[0]] == [2]

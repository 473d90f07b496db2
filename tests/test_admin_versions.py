"""admin/versions.py against a real migrated SQLite file: the first save also keeps the file as it
was, numbers grow, a stale or failed save stores no row, and an old version restores as a new one."""
from __future__ import annotations

import json

import pytest
from sqlalchemy.exc import OperationalError

from nistchat.admin import versions
from nistchat.extensions import db
from nistchat.models import ConfigVersion
from nistchat.topics import questions


def config_named(name: str) -> dict:
    return {"categories": [{"name": name, "emoji": "", "questions": [f"What about {name}?"]}]}


def live_sha(app) -> str:
    return questions.sha256(questions.read_text(app.config["SETTINGS"].questions_path))


def test_the_first_save_keeps_the_default_as_version_1(app):
    default_text = questions.DEFAULT_PATH.read_text(encoding="utf-8")
    with app.app_context():
        row = versions.save_config(config_named("First"), live_sha(app), note="first edit")
        assert (row.version, row.note) == (2, "first edit")
        saved = app.config["SETTINGS"].questions_path.read_text(encoding="utf-8")
        assert row.content == saved and row.sha256 == questions.sha256(saved)
        assert json.loads(saved) == config_named("First")
        v1 = versions.get_version(1)
        assert (v1.content, v1.sha256, v1.note) == (default_text, questions.sha256(default_text),
                                                   "as it was before the first save")
        assert v1.saved_at is not None and db.session.query(ConfigVersion).count() == 2


def test_later_saves_add_one_version_each_listed_newest_first(app):
    with app.app_context():
        for name in ("A", "B", "C"):
            versions.save_config(config_named(name), live_sha(app), note="x" * 300)
        listed = versions.list_versions()
        assert [v.version for v in listed] == [4, 3, 2, 1]
        assert [v.version for v in versions.list_versions(limit=2)] == [4, 3]
        assert json.loads(listed[0].content) == config_named("C")
        assert len(listed[0].note) == 200  # the column's length
        assert versions.get_version(5) is None


def test_a_stale_save_stores_nothing(app):
    with app.app_context():
        old_sha = live_sha(app)
        versions.save_config(config_named("Winner"), old_sha, note="")
        with pytest.raises(questions.StaleVersion):
            versions.save_config(config_named("Loser"), old_sha, note="")
        assert [v.version for v in versions.list_versions()] == [2, 1]
    assert json.loads(app.config["SETTINGS"].questions_path.read_text(encoding="utf-8")) == config_named("Winner")


def test_a_save_whose_file_write_fails_stores_no_version(app, monkeypatch):
    def disk_full(_path, _text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(questions, "_atomic_write", disk_full)
    with app.app_context():
        with pytest.raises(OSError):
            versions.save_config(config_named("Never"), live_sha(app), note="")
        # the new version's row was committed first and is deleted again; v1 (the file as it
        # still is) may stay: the newest version listed matches the file on disk
        assert [v.version for v in versions.list_versions()] == [1]
        assert versions.get_version(1).content == questions.DEFAULT_PATH.read_text(encoding="utf-8")
    assert not app.config["SETTINGS"].questions_path.exists()


def test_the_database_is_committed_before_the_file_is_replaced(app, monkeypatch):
    with app.app_context():
        versions.save_config(config_named("Before"), live_sha(app), note="")
    path = app.config["SETTINGS"].questions_path
    before = path.read_text(encoding="utf-8")
    seen = []
    real_write = questions._atomic_write

    def write_after_checking(target, text):
        with app.app_context():  # another connection: is the new version committed already?
            seen.append(db.session.query(ConfigVersion).count())
        real_write(target, text)

    monkeypatch.setattr(questions, "_atomic_write", write_after_checking)
    with app.app_context():
        versions.save_config(config_named("After"), live_sha(app), note="")
    assert seen == [3]

    def commit_fails():
        raise OperationalError("COMMIT", {}, Exception("database is locked"))

    with app.app_context():
        monkeypatch.setattr(db.session, "commit", commit_fails)
        with pytest.raises(OperationalError):
            versions.save_config(config_named("Lost"), live_sha(app), note="")
        monkeypatch.undo()
        assert [v.version for v in versions.list_versions()] == [3, 2, 1]
    assert json.loads(path.read_text(encoding="utf-8")) == config_named("After") != json.loads(before)


def test_restoring_an_old_version_saves_it_again_as_a_new_one(app):
    with app.app_context():
        versions.save_config(config_named("Old"), live_sha(app), note="")
        versions.save_config(config_named("New"), live_sha(app), note="")
        old = versions.get_version(2)
        restored = versions.save_config(json.loads(old.content), live_sha(app), note="restored version 2")
        assert restored.version == 4 and restored.sha256 == old.sha256  # same text, new number
        assert [v.version for v in versions.list_versions()] == [4, 3, 2, 1]  # history kept
        assert json.loads(versions.get_version(3).content) == config_named("New")
    assert json.loads(app.config["SETTINGS"].questions_path.read_text(encoding="utf-8")) == config_named("Old")

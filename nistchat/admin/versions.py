"""Saving questions_config from the admin pages: validated, atomic, versioned in ConfigVersion,
refused when based on an older version (see topics.questions.save)."""
from __future__ import annotations

from flask import current_app

from ..extensions import db
from ..models import ConfigVersion
from ..topics import questions


def _next_number() -> int:
    return (db.session.query(db.func.max(ConfigVersion.version)).scalar() or 0) + 1


def save_config(config: dict, base_sha: str, note: str) -> ConfigVersion:
    """Raises questions.StaleVersion when the file moved on since `base_sha`.

    The version rows are committed first, inside the save lock, and only then is the file
    replaced (atomically): a failed commit leaves the file as it was. Should the file then fail
    to be written, the rows just committed are deleted again, so the list never shows a
    version the file does not hold."""
    path = current_app.config["SETTINGS"].questions_path
    created: list[ConfigVersion] = []

    def record(old_text: str, new_text: str) -> None:
        if db.session.query(ConfigVersion.id).first() is None:
            db.session.add(ConfigVersion(version=1, sha256=questions.sha256(old_text), content=old_text,
                                         note="as it was before the first save"))
            db.session.flush()
        row = ConfigVersion(version=_next_number(), sha256=questions.sha256(new_text), content=new_text,
                            note=note[:200])
        db.session.add(row)
        db.session.commit()
        created.append(row)

    try:
        questions.save(path, config, base_sha, record)
    except BaseException:
        db.session.rollback()
        if created:  # committed, but the file was not replaced
            db.session.delete(created[0])
            db.session.commit()
        raise
    return created[0]


def list_versions(limit: int = 50) -> list[ConfigVersion]:
    return ConfigVersion.query.order_by(ConfigVersion.version.desc()).limit(limit).all()


def get_version(number: int) -> ConfigVersion | None:
    return ConfigVersion.query.filter_by(version=number).first()

"""History listing and full-text search over questions and answers, scoped to one browser's
conversations unless the viewer is an admin. The search itself is the database engine's
(database.py: FTS5 on SQLite, tsvector on PostgreSQL); what is searched for is decided here."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from flask import current_app
from sqlalchemy import func

from ..database import Hit, SearchQuery
from ..extensions import app_database, db
from ..models import Conversation, Feedback, Message
from ..web import HIGHLIGHT_END, HIGHLIGHT_START

MAX_TERMS = 12


def search_terms(q: str | None) -> tuple[str, ...]:
    """The words of what was typed, at most MAX_TERMS: only word characters, so no engine's
    query syntax (quotes, operators, column filters) survives; each is matched as a prefix so
    search-as-you-type finds words while they are being typed."""
    return tuple(re.findall(r"\w+", q or "", flags=re.UNICODE)[:MAX_TERMS])


@dataclass
class ConversationRow:
    id: str
    title: str
    updated_at: datetime
    messages: int
    owner: str
    up: int = 0  # 👍 on its answers
    down: int = 0  # 👎 on its answers


def search(q: str, owner: str | None, page: int, size: int) -> tuple[list[Hit], int]:
    terms = search_terms(q)
    if not terms:
        return [], 0
    return app_database(current_app).search(db.session, SearchQuery(
        terms, owner, size, (page - 1) * size, HIGHLIGHT_START, HIGHLIGHT_END))


def conversations(owner: str | None, page: int, size: int) -> tuple[list[ConversationRow], int]:
    base = Conversation.query
    if owner is not None:
        base = base.filter(Conversation.owner == owner)
    total = base.count()
    counts = (db.session.query(Message.conversation_id, func.count(Message.id))
              .group_by(Message.conversation_id).subquery())
    rows = (base.outerjoin(counts, counts.c.conversation_id == Conversation.id)
            .with_entities(Conversation.id, Conversation.title, Conversation.updated_at,
                           func.coalesce(counts.c[1], 0), Conversation.owner)
            .order_by(Conversation.updated_at.desc(), Conversation.id.desc())
            .limit(size).offset((page - 1) * size).all())
    votes: dict[tuple[str, str], int] = {}
    if rows:
        for conv_id, vote, n in (db.session.query(Message.conversation_id, Feedback.vote, func.count(Feedback.id))
                                 .join(Feedback, Feedback.message_id == Message.id)
                                 .filter(Message.conversation_id.in_([r[0] for r in rows]))
                                 .group_by(Message.conversation_id, Feedback.vote)):
            votes[(conv_id, vote)] = n
    return [ConversationRow(*r, up=votes.get((r[0], "up"), 0), down=votes.get((r[0], "down"), 0))
            for r in rows], total

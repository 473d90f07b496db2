"""History listing and full-text search (SQLite FTS5 over questions and answers), scoped to one
browser's conversations unless the viewer is an admin."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, text

from ..extensions import db
from ..models import Conversation, Feedback, Message
from ..web import HIGHLIGHT_END, HIGHLIGHT_START

MAX_TERMS = 12


def fts_query(q: str) -> str:
    """User text to a safe FTS5 query: each word quoted (no operators), prefix-matched so
    search-as-you-type finds words while they are being typed."""
    terms = re.findall(r"\w+", q or "", flags=re.UNICODE)[:MAX_TERMS]
    return " ".join(f'"{t}"*' for t in terms)


@dataclass
class Hit:
    message_id: int
    conversation_id: str
    created_at: datetime
    question: str  # with highlight sentinels
    answer: str  # snippet with highlight sentinels


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
    query = fts_query(q)
    if not query:
        return [], 0
    scope = "" if owner is None else "AND m.owner = :owner"
    params = {"query": query, "owner": owner, "limit": size, "offset": (page - 1) * size,
              "hs": HIGHLIGHT_START, "he": HIGHLIGHT_END}
    total = db.session.execute(text(
        f"SELECT count(*) FROM message_fts JOIN message m ON m.id = message_fts.rowid "
        f"WHERE message_fts MATCH :query {scope}"), params).scalar_one()
    rows = db.session.execute(text(
        "SELECT m.id, m.conversation_id, m.created_at, "
        "highlight(message_fts, 0, :hs, :he) AS q, snippet(message_fts, 1, :hs, :he, ' … ', 30) AS a "
        f"FROM message_fts JOIN message m ON m.id = message_fts.rowid WHERE message_fts MATCH :query {scope} "
        "ORDER BY m.id DESC LIMIT :limit OFFSET :offset"), params).all()
    hits = [Hit(r[0], r[1], r[2] if isinstance(r[2], datetime) else datetime.fromisoformat(str(r[2])), r[3] or "",
                r[4] or "") for r in rows]
    return hits, int(total)


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

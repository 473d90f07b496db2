"""Feedback on answers: record a browser's vote (one per answer, changeable) and summarise votes
for History, /metrics and the logs."""
from __future__ import annotations

from dataclasses import dataclass

from ..auth import owner_id
from ..extensions import db
from ..models import FEEDBACK_REASONS, Feedback, Message, utcnow
from ..web import clean_text

MAX_TEXT_CHARS = 2000


class BadFeedback(ValueError):
    """A vote that cannot be stored; the message says why (shown to the person, 422)."""


@dataclass(frozen=True)
class Vote:
    """A checked vote from a form: "up", or "down" with a reason key and optional text."""
    vote: str
    reason: str | None = None
    text: str | None = None

    @classmethod
    def from_form(cls, vote: str | None, reason: str | None, text: str | None) -> "Vote":
        vote = (vote or "").strip()
        if vote not in ("up", "down"):
            raise BadFeedback("Choose 👍 or 👎.")
        text = clean_text(text).strip()
        if len(text) > MAX_TEXT_CHARS:
            raise BadFeedback(f"The note is {len(text):,} characters long; the limit is {MAX_TEXT_CHARS:,}.")
        if vote == "up":
            return cls("up", None, text or None)
        if reason not in FEEDBACK_REASONS:
            raise BadFeedback("Choose what was wrong with the answer.")
        return cls("down", reason, text or None)


def my_feedback(message: Message) -> Feedback | None:
    """This browser's vote on the message, if any."""
    me = owner_id()
    return next((f for f in message.feedback if f.owner == me), None)


def record(message: Message, vote: Vote) -> Feedback:
    """Store this browser's vote on the message, replacing its earlier one."""
    row = my_feedback(message)
    if row is None:
        row = Feedback(message_id=message.id, owner=owner_id())
        db.session.add(row)
        message.feedback.append(row)
    row.vote, row.reason, row.text = vote.vote, vote.reason, vote.text
    row.updated_at = utcnow()
    db.session.commit()
    return row


def tally(rows) -> dict:
    """{"up": n, "down": n} over feedback rows."""
    rows = list(rows)
    return {"up": sum(r.vote == "up" for r in rows), "down": sum(r.vote == "down" for r in rows)}

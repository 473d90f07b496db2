"""What NISTChat stores: conversations and their messages (everything needed to audit an answer),
per-stage timings (the progress bar's P80), evaluation runs, and questions_config versions.

SQLAlchemy 2.0 style: `Mapped[T]` gives the Python type and the nullability (`T | None` is
nullable); each column names its SQL type, so the schema is exactly the one the migrations create
(tests/test_models_schema.py compares the two)."""
from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .engine.backends import reader_ticket
from .extensions import db


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def new_id() -> str:
    return uuid.uuid4().hex


def is_new_id(value: str) -> bool:
    """Whether `value` has new_id's shape: anything else (a NUL, which PostgreSQL refuses in text,
    or a 40-character guess) cannot be a conversation and needs no query."""
    return len(value) == 32 and all(c in "0123456789abcdef" for c in value)


class Conversation(db.Model):
    """One chat thread; `owner` is the anonymous browser id kept in the session cookie."""
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner: Mapped[str] = mapped_column(String(64), index=True)
    title: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    messages: Mapped[list[Message]] = relationship(back_populates="conversation", order_by="Message.id",
                                                   cascade="all, delete-orphan")


class Message(db.Model):
    """One question and its answer. Created `pending` when asked; completed in one transaction
    when the answer stream ends (or marked incomplete with the error when it fails)."""
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[str] = mapped_column(String(32), ForeignKey("conversation.id", ondelete="CASCADE"),
                                                 index=True)
    owner: Mapped[str] = mapped_column(String(64), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending | done | error
    question: Mapped[str] = mapped_column(Text)  # what the user typed, or the topic label
    label: Mapped[str | None] = mapped_column(Text)  # topic label shown, when asked from a topic button
    prompt: Mapped[str | None] = mapped_column(Text)  # text actually sent to the engine
    direct_answer: Mapped[str | None] = mapped_column(Text)  # configured verbatim answer, when the topic has one
    answer: Mapped[str] = mapped_column(Text, default="")
    refused: Mapped[bool] = mapped_column(Boolean, default=False)
    risk: Mapped[str | None] = mapped_column(String(8))
    disclaimer: Mapped[str | None] = mapped_column(Text)
    verdicts: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)  # [{"text", "supported", "passage"}]
    retried: Mapped[bool] = mapped_column(Boolean, default=False)
    retry_reason: Mapped[str | None] = mapped_column(Text)
    retry_kept: Mapped[bool | None] = mapped_column(Boolean)  # the retry's answer kept (None: no retry, or before 0011)
    sources: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)  # passages shown to the user
    backend: Mapped[dict[str, str] | None] = mapped_column(JSON)  # role -> "backend:model"
    error_kind: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text)
    incomplete: Mapped[bool] = mapped_column(Boolean, default=False)
    total_ms: Mapped[float | None] = mapped_column(Float)  # submit to final, queue wait included (the P80 samples)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # answer runs started
    docs: Mapped[list[str] | None] = mapped_column(JSON)  # documents the search was limited to (None/[]: all)
    searched_for: Mapped[str | None] = mapped_column(Text)  # a follow-up's resolved question (None: as asked)
    kind: Mapped[str] = mapped_column(String(16), default="chat", server_default="chat")  # chat | audit
    audit: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # an audit's trust score, label, sentences
    conversation: Mapped[Conversation] = relationship(back_populates="messages")
    timings: Mapped[list[Timing]] = relationship(back_populates="message", cascade="all, delete-orphan")
    feedback: Mapped[list[Feedback]] = relationship(back_populates="message", cascade="all, delete-orphan",
                                                    order_by="Feedback.id")

    @property
    def shown_question(self) -> str:
        return self.label or self.question

    @property
    def timings_ms(self) -> dict:
        return {t.stage: t.ms for t in self.timings}


class Timing(db.Model):
    """Milliseconds one stage of one answer took (retrieve, first_token, generate, verify, ...)."""
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    message_id: Mapped[int] = mapped_column(Integer, ForeignKey("message.id", ondelete="CASCADE"), index=True)
    stage: Mapped[str] = mapped_column(String(32))
    ms: Mapped[float] = mapped_column(Float)
    message: Mapped[Message] = relationship(back_populates="timings")


FEEDBACK_REASONS = {
    "wrong": "Wrong",
    "incomplete": "Incomplete",
    "wrong_source": "Wrong source",
    "should_have_answered": "Should have answered",
    "should_not_have_answered": "Should not have answered",
}


class Feedback(db.Model):
    """One browser's vote on one answer ("up" or "down"; a down vote names a reason from
    FEEDBACK_REASONS and may say more). Voting again changes it: one row per (message, owner)."""
    __table_args__ = (UniqueConstraint("message_id", "owner", name="uq_feedback_message_owner"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    message_id: Mapped[int] = mapped_column(Integer, ForeignKey("message.id", ondelete="CASCADE"), index=True)
    owner: Mapped[str] = mapped_column(String(64))
    vote: Mapped[str] = mapped_column(String(8))  # up | down
    reason: Mapped[str | None] = mapped_column(String(32))  # a FEEDBACK_REASONS key, for a down vote
    text: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    message: Mapped[Message] = relationship(back_populates="feedback")

    @property
    def reason_label(self) -> str:
        return FEEDBACK_REASONS.get(self.reason or "", "")

    def to_dict(self) -> dict:
        return {"vote": self.vote, "reason": self.reason, "text": self.text,
                "time": self.updated_at.isoformat(timespec="seconds")}


class ReportedItem(db.Model):
    """An evaluation item an admin made from a 👎: the question asked, the answer it should have
    had and the evidence, copied verbatim from the document (the golden sets' format). Together
    they are the `reported` set (`nistchat eval answers --set reported`, the /evals page)."""
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    feedback_id: Mapped[int | None] = mapped_column(Integer, ForeignKey("feedback.id", ondelete="SET NULL"), index=True)
    question: Mapped[str] = mapped_column(Text)
    doc: Mapped[str | None] = mapped_column(String(64))  # None: a question the documents do not answer
    category: Mapped[str] = mapped_column(String(32))
    evidence: Mapped[list[str]] = mapped_column(JSON)
    answer: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    @property
    def item_id(self) -> str:
        return f"r{self.id:03d}"

    def golden(self) -> dict:
        """The item as a line of a golden JSONL set."""
        return {"id": self.item_id, "doc": self.doc, "category": self.category, "question": self.question,
                "evidence": list(self.evidence or []), "answer": self.answer or ""}


class EvalRun(db.Model):
    """One evaluation run (retrieval or answers) over the golden set, for the evaluation issue."""
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))  # retrieval | answers | compare
    started_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    config: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # backends, models, k, thresholds
    metrics: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # summary numbers
    note: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="done", server_default="done")  # running | done | error | interrupted
    done: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # progress: items finished
    total: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    sets: Mapped[str | None] = mapped_column(String(200))  # "dev,test" or a file's stem
    items: Mapped[list[EvalItem]] = relationship(back_populates="run", cascade="all, delete-orphan")


class EvalItem(db.Model):
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer, ForeignKey("eval_run.id", ondelete="CASCADE"), index=True)
    question_id: Mapped[str | None] = mapped_column(String(64))
    question: Mapped[str] = mapped_column(Text)
    expected: Mapped[Any | None] = mapped_column(JSON)
    result: Mapped[Any | None] = mapped_column(JSON)
    passed: Mapped[bool | None] = mapped_column(Boolean)
    ms: Mapped[float | None] = mapped_column(Float)
    set_name: Mapped[str | None] = mapped_column(String(64))
    category: Mapped[str | None] = mapped_column(String(32))
    run: Mapped[EvalRun] = relationship(back_populates="items")


class ConfigVersion(db.Model):
    """A saved questions_config; the newest matches the file on disk. Restoring an old one saves
    it again as a new version, so history is never rewritten."""
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer, unique=True)
    sha256: Mapped[str] = mapped_column(String(64))
    content: Mapped[str] = mapped_column(Text)
    saved_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    note: Mapped[str] = mapped_column(String(200), default="")


class AdminSession(db.Model):
    """One administrator login, held on the server: the browser's session cookie carries a random
    token whose SHA-256 is `id`. Logout (or "log out everywhere") sets `revoked_at`, so a copy of
    the cookie taken earlier no longer opens /admin; idle and absolute limits apply on top."""
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime, index=True)
    address: Mapped[str] = mapped_column(String(64), default="")


# -- several web processes on one database (queue.shared; docs/deployment.md, scale-out)
# The reader queue's tickets: the engine's own table (engine/backends/shared_queue.py, which has no
# Flask), copied into the models' metadata so the schema test and autogenerate see it.
READER_TICKET = reader_ticket.to_metadata(db.metadata)


class AnswerLease(db.Model):
    """An answer being written and the process writing it, renewed while it runs (chat/shared.py):
    another process sends its stream from `AnswerEvents`, and resumes it only once the lease has
    run out (the writer died), never while it is alive."""
    __tablename__ = "answer_run"
    message_id: Mapped[int] = mapped_column(Integer, ForeignKey("message.id", ondelete="CASCADE"),
                                            primary_key=True, autoincrement=False)
    holder: Mapped[str] = mapped_column(String(80))
    lease_until: Mapped[float] = mapped_column(Float)  # epoch seconds


class AnswerEvents(db.Model):
    """One batch of an answer's stream events (JSON list), `seq` the index of its first event;
    deleted with the lease once the answer is stored."""
    __tablename__ = "answer_event"
    __table_args__ = (UniqueConstraint("message_id", "seq", name="uq_answer_event_message_seq"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    message_id: Mapped[int] = mapped_column(Integer, ForeignKey("message.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    events: Mapped[str] = mapped_column(Text)

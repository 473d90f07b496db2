"""What NISTChat stores: conversations and their messages (everything needed to audit an answer),
per-stage timings (the progress bar's P80), evaluation runs, and questions_config versions."""
from __future__ import annotations

import uuid
from datetime import datetime, timezone

from sqlalchemy import JSON

from .extensions import db


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def new_id() -> str:
    return uuid.uuid4().hex


class Conversation(db.Model):
    """One chat thread; `owner` is the anonymous browser id kept in the session cookie."""
    id = db.Column(db.String(32), primary_key=True, default=new_id)
    owner = db.Column(db.String(64), nullable=False, index=True)
    title = db.Column(db.String(200), nullable=False, default="")
    created_at = db.Column(db.DateTime, nullable=False, default=utcnow)
    updated_at = db.Column(db.DateTime, nullable=False, default=utcnow, index=True)
    messages = db.relationship("Message", back_populates="conversation", order_by="Message.id",
                               cascade="all, delete-orphan")


class Message(db.Model):
    """One question and its answer. Created `pending` when asked; completed in one transaction
    when the answer stream ends (or marked incomplete with the error when it fails)."""
    id = db.Column(db.Integer, primary_key=True)
    conversation_id = db.Column(db.String(32), db.ForeignKey("conversation.id", ondelete="CASCADE"),
                                nullable=False, index=True)
    owner = db.Column(db.String(64), nullable=False, index=True)
    created_at = db.Column(db.DateTime, nullable=False, default=utcnow, index=True)
    finished_at = db.Column(db.DateTime)
    status = db.Column(db.String(16), nullable=False, default="pending")  # pending | done | error
    question = db.Column(db.Text, nullable=False)  # what the user typed, or the topic label
    label = db.Column(db.Text)  # topic label shown, when asked from a topic button
    prompt = db.Column(db.Text)  # text actually sent to the engine
    direct_answer = db.Column(db.Text)  # configured verbatim answer, when the topic has one
    answer = db.Column(db.Text, nullable=False, default="")
    refused = db.Column(db.Boolean, nullable=False, default=False)
    risk = db.Column(db.String(8))
    disclaimer = db.Column(db.Text)
    verdicts = db.Column(JSON)  # [{"text", "supported", "passage"}]
    retried = db.Column(db.Boolean, nullable=False, default=False)
    retry_reason = db.Column(db.Text)
    sources = db.Column(JSON)  # passages shown to the user
    backend = db.Column(JSON)  # role -> "backend:model"
    error_kind = db.Column(db.String(32))
    error = db.Column(db.Text)
    incomplete = db.Column(db.Boolean, nullable=False, default=False)
    total_ms = db.Column(db.Float)  # submit to final, queue wait included (the P80 samples)
    attempts = db.Column(db.Integer, nullable=False, default=0, server_default="0")  # answer runs started
    conversation = db.relationship("Conversation", back_populates="messages")
    timings = db.relationship("Timing", back_populates="message", cascade="all, delete-orphan")

    @property
    def shown_question(self) -> str:
        return self.label or self.question

    @property
    def timings_ms(self) -> dict:
        return {t.stage: t.ms for t in self.timings}


class Timing(db.Model):
    """Milliseconds one stage of one answer took (retrieve, first_token, generate, verify, ...)."""
    id = db.Column(db.Integer, primary_key=True)
    message_id = db.Column(db.Integer, db.ForeignKey("message.id", ondelete="CASCADE"), nullable=False, index=True)
    stage = db.Column(db.String(32), nullable=False)
    ms = db.Column(db.Float, nullable=False)
    message = db.relationship("Message", back_populates="timings")


class EvalRun(db.Model):
    """One evaluation run (retrieval or answers) over the golden set, for the evaluation issue."""
    id = db.Column(db.Integer, primary_key=True)
    kind = db.Column(db.String(32), nullable=False)  # retrieval | answers | compare
    started_at = db.Column(db.DateTime, nullable=False, default=utcnow)
    finished_at = db.Column(db.DateTime)
    config = db.Column(JSON)  # backends, models, k, thresholds
    metrics = db.Column(JSON)  # summary numbers
    note = db.Column(db.Text)
    status = db.Column(db.String(16), nullable=False, default="done", server_default="done")  # running | done | error
    done = db.Column(db.Integer, nullable=False, default=0, server_default="0")  # progress: items finished
    total = db.Column(db.Integer, nullable=False, default=0, server_default="0")
    sets = db.Column(db.String(200))  # "dev,test" or a file's stem
    items = db.relationship("EvalItem", back_populates="run", cascade="all, delete-orphan")


class EvalItem(db.Model):
    id = db.Column(db.Integer, primary_key=True)
    run_id = db.Column(db.Integer, db.ForeignKey("eval_run.id", ondelete="CASCADE"), nullable=False, index=True)
    question_id = db.Column(db.String(64))
    question = db.Column(db.Text, nullable=False)
    expected = db.Column(JSON)
    result = db.Column(JSON)
    passed = db.Column(db.Boolean)
    ms = db.Column(db.Float)
    set_name = db.Column(db.String(64))
    category = db.Column(db.String(32))
    run = db.relationship("EvalRun", back_populates="items")


class ConfigVersion(db.Model):
    """A saved questions_config; the newest matches the file on disk. Restoring an old one saves
    it again as a new version, so history is never rewritten."""
    id = db.Column(db.Integer, primary_key=True)
    version = db.Column(db.Integer, nullable=False, unique=True)
    sha256 = db.Column(db.String(64), nullable=False)
    content = db.Column(db.Text, nullable=False)
    saved_at = db.Column(db.DateTime, nullable=False, default=utcnow)
    note = db.Column(db.String(200), nullable=False, default="")

"""Answer runs: each question's engine stream runs in its own thread and is recorded as a replayable
list of events, so the page's stream can connect a moment later, reconnect, or go away without
losing the answer (the run always finishes and stores it).

The web layer holds no retrieval logic: it only consumes `runtime.answer()`'s typed events and
serialises them for the page (SSE) and the API (NDJSON).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Iterator

from flask import Flask

from ..engine import (BackendError, Checked, Error, Event, Failure, Final, IndexMissing, Queue, Retry, Sources,
                      Ticket, Token)
from ..logs import daily
from .store import Outcome, engine_history, finish_message

log = logging.getLogger(__name__)
KEEP_FINISHED_S = 300  # a finished run stays replayable this long (for reconnects)
MAX_ATTEMPTS = 2  # the first run, and one resume after a server restart; never a loop


class AnswerRun:
    def __init__(self, message_id: int, ticket: Ticket | None = None):
        self.message_id = message_id
        self.ticket = ticket  # the answer's place in the reader queue
        self.submitted = time.monotonic()
        self.first_token_at: float | None = None
        self.ahead = 0  # answers ahead in the reader queue, from the engine's last `queue` event
        self.finished_at: float | None = None
        self.events: list[dict] = []
        self._cond = threading.Condition()

    @property
    def done(self) -> bool:
        return self.finished_at is not None

    def publish(self, event: dict) -> None:
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self.finished_at = time.monotonic()
            self._cond.notify_all()

    def follow(self, tick_s: float) -> Iterator[dict | None]:
        """Every event from the first, as they come; None after `tick_s` of silence (heartbeat)."""
        seen = 0
        while True:
            with self._cond:
                if seen >= len(self.events) and not self.done:
                    self._cond.wait(tick_s)
                batch = self.events[seen:]
                seen += len(batch)
                finished = self.done and seen >= len(self.events)
            if batch:
                yield from batch
            elif not finished:
                yield None
            if finished:
                return


class RunRegistry:
    """The app's live and recently finished runs."""

    def __init__(self):
        self._runs: dict[int, AnswerRun] = {}
        self._lock = threading.Lock()

    def get(self, message_id: int) -> AnswerRun | None:
        with self._lock:
            return self._runs.get(message_id)

    def active(self) -> int:
        with self._lock:
            return sum(1 for r in self._runs.values() if not r.done)

    def new_run(self, message_id: int, ticket: Ticket | None = None) -> AnswerRun:
        """The run object (chat/shared.py's registry makes one the other processes can follow)."""
        return AnswerRun(message_id, ticket)

    def start(self, app: Flask, runtime, message_id: int, ticket: Ticket | None = None) -> AnswerRun:
        with self._lock:
            now = time.monotonic()
            for key in [k for k, r in self._runs.items() if r.done and now - r.finished_at > KEEP_FINISHED_S]:
                del self._runs[key]
            if message_id in self._runs:
                if ticket is not None:
                    runtime.queue.finish(ticket)
                return self._runs[message_id]
            run = self.new_run(message_id, ticket)
            self._runs[message_id] = run
        thread = threading.Thread(target=execute, args=(app, runtime, run), name=f"answer-{message_id}", daemon=True)
        thread.start()
        return run


def registry(app: Flask) -> RunRegistry:
    return app.extensions.setdefault("nistchat_runs", RunRegistry())


def shown_passages(passages: list[dict]) -> list[dict]:
    """Number passages as the reader saw them ([n] in the answer, `passage` in verdicts)."""
    return [{**p, "rank": p.get("n", i)} for i, p in enumerate(passages, 1)]


def _failed(outcome: Outcome, kind: str, message: str) -> dict:
    outcome.failure = Failure(kind, message, outcome.partial)
    return Error(outcome.failure).to_dict()


def execute(app: Flask, runtime, run: AnswerRun) -> None:
    """Consume the engine's events for one message, publish each (serialised here, at the edge),
    then store the outcome. The run's ticket is handed to the answer, which finishes it."""
    from ..extensions import db
    from ..models import Message

    with app.app_context():
        message = db.session.get(Message, run.message_id)
        outcome = Outcome()
        ticket, run.ticket = run.ticket, None
        try:
            message.attempts = (message.attempts or 0) + 1  # committed before the reader is touched
            db.session.commit()
            events = runtime.answer(message.prompt or message.question, engine_history(message), label=message.label,
                                    direct_answer=message.direct_answer, ticket=ticket, docs=message.docs)
            ticket = None  # the answer owns it now
            for event in events:
                run.publish(record(event, outcome, run))
        except IndexMissing as exc:
            run.publish(_failed(outcome, "index_missing", str(exc)))
        except BackendError as exc:
            run.publish(_failed(outcome, exc.kind, exc.message))
        except Exception as exc:  # never a stack trace on the page; the log has it
            log.exception("answer %s failed", run.message_id)
            run.publish(_failed(outcome, "internal", f"The answer failed unexpectedly ({type(exc).__name__}). "
                                                     "The server log has the details."))
        finally:
            if ticket is not None:  # never handed to an answer
                runtime.queue.finish(ticket)
        if outcome.answer is None and outcome.failure is None:
            run.publish(_failed(outcome, "interrupted", "The answer stopped before it was complete."))
        outcome.wall_ms = round((time.monotonic() - run.submitted) * 1000, 1)
        try:
            stored = finish_message(run.message_id, outcome)
            daily.append(app.config["SETTINGS"].instance_dir, {
                "message": stored.id, "conversation": stored.conversation_id, "owner": stored.owner,
                "question": stored.question, "label": stored.label, "risk": stored.risk,
                "refused": stored.refused, "retried": stored.retried, "status": stored.status,
                "error": stored.error, "ms": stored.total_ms, "backend": stored.backend,
                "docs": stored.docs or [], "answer": stored.answer})
        except Exception:
            log.exception("storing answer %s failed", run.message_id)
            db.session.rollback()
        finally:
            db.session.remove()
        run.publish({"type": "stored", "message_id": run.message_id})
        run.close()


def record(event: Event, outcome: Outcome, run: AnswerRun) -> dict:
    """Note what the store will need from one event, and give its wire form (the page's numbering)."""
    data = event.to_dict()
    if isinstance(event, Sources):
        data["passages"] = outcome.sources = shown_passages(data["passages"])
        outcome.risk = event.risk or outcome.risk
        outcome.searched_for = event.searched_for or outcome.searched_for
    elif isinstance(event, Token):
        if run.first_token_at is None:
            run.first_token_at = time.monotonic()
        outcome.partial += event.text
    elif isinstance(event, Checked):
        outcome.verdicts.append({k: data[k] for k in ("text", "supported", "passage")})
    elif isinstance(event, Retry):
        outcome.retry_reason, outcome.partial, outcome.verdicts = event.reason, "", []
    elif isinstance(event, Final):
        outcome.answer = event.answer
    elif isinstance(event, Error):
        outcome.failure = event.failure
    elif isinstance(event, Queue):
        run.ahead = event.ahead
    return data


def abandon(message_id: int, reason: str) -> None:
    """Mark a pending message that will not be run again as failed, keeping what it has."""
    finish_message(message_id, Outcome(failure=Failure("interrupted", reason)))


def resume_or_abandon(app: Flask, runtime, message) -> AnswerRun | None:
    """A pending message with no live run was cut off by a server restart: run it once more, or,
    if that already happened, record why it stopped instead of running it in a loop."""
    if message.attempts >= MAX_ATTEMPTS:
        abandon(message.id, "The server stopped while writing this answer, and again when it was resumed; "
                            "it was not tried a third time. Please ask again.")
        return None
    return registry(app).start(app, runtime, message.id)

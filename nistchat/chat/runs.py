"""Answer runs: each question's engine stream runs in its own thread and is recorded as a replayable
list of events, so the page's stream can connect a moment later, reconnect, or go away without
losing the answer (the run always finishes and stores it).

The web layer holds no retrieval logic: it only consumes `runtime.answer()` events.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Iterator

from flask import Flask

from ..engine.backends.base import BackendError
from ..engine.runtime import IndexMissing
from ..logs import daily
from .store import engine_history, finish_message

log = logging.getLogger(__name__)
KEEP_FINISHED_S = 300  # a finished run stays replayable this long (for reconnects)


class AnswerRun:
    def __init__(self, message_id: int):
        self.message_id = message_id
        self.submitted = time.monotonic()
        self.first_token_at: float | None = None
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
    """The app's live and recently finished runs, in submit order (for "N answers ahead")."""

    def __init__(self):
        self._runs: dict[int, AnswerRun] = {}
        self._lock = threading.Lock()

    def get(self, message_id: int) -> AnswerRun | None:
        with self._lock:
            return self._runs.get(message_id)

    def ahead(self, run: AnswerRun) -> int:
        """Unfinished answers submitted before this one (they hold the reader first)."""
        with self._lock:
            return sum(1 for r in self._runs.values() if r.submitted < run.submitted and not r.done)

    def active(self) -> int:
        with self._lock:
            return sum(1 for r in self._runs.values() if not r.done)

    def start(self, app: Flask, runtime, message_id: int) -> AnswerRun:
        with self._lock:
            now = time.monotonic()
            for key in [k for k, r in self._runs.items() if r.done and now - r.finished_at > KEEP_FINISHED_S]:
                del self._runs[key]
            if message_id in self._runs:
                return self._runs[message_id]
            run = AnswerRun(message_id)
            self._runs[message_id] = run
        thread = threading.Thread(target=execute, args=(app, runtime, run), name=f"answer-{message_id}", daemon=True)
        thread.start()
        return run


def registry(app: Flask) -> RunRegistry:
    return app.extensions.setdefault("nistchat_runs", RunRegistry())


def shown_passages(passages: list[dict]) -> list[dict]:
    """Number passages as the reader saw them ([n] in the answer, `passage` in verdicts)."""
    return [{**p, "rank": p.get("n", i)} for i, p in enumerate(passages, 1)]


def with_text(final_sources: list[dict], shown: list[dict]) -> list[dict]:
    """The final source list carries no passage text; add it back so a stored answer can show
    the supporting passage on expand."""
    by_id = {p.get("id"): p for p in shown}
    return [{**s, "text": s.get("text") or by_id.get(s.get("id"), {}).get("text", "")} for s in final_sources]


def _error(kind: str, message: str, partial: str) -> dict:
    return {"type": "error", "kind": kind, "message": message, "partial": partial}


def execute(app: Flask, runtime, run: AnswerRun) -> None:
    """Consume the engine's events for one message, publish each, then store the outcome."""
    from ..extensions import db
    from ..models import Message

    with app.app_context():
        message = db.session.get(Message, run.message_id)
        outcome: dict = {"verdicts": []}
        tokens: list[str] = []
        try:
            history = engine_history(message)
            events = runtime.answer(message.prompt or message.question, history, label=message.label,
                                    direct_answer=message.direct_answer)
            for event in events:
                data = event.to_dict() if hasattr(event, "to_dict") else dict(event)
                kind = data.get("type")
                if kind == "sources":
                    data = {**data, "passages": shown_passages(data.get("passages", []))}
                    outcome["sources"] = data["passages"]
                    outcome["risk"] = data.get("risk") or outcome.get("risk")
                elif kind == "token":
                    if run.first_token_at is None:
                        run.first_token_at = time.monotonic()
                    tokens.append(data.get("text", ""))
                elif kind == "verdict":
                    outcome["verdicts"].append({k: data.get(k) for k in ("text", "supported", "passage")})
                elif kind == "retry":
                    outcome["retry_reason"] = data.get("reason", "")
                    tokens, outcome["verdicts"] = [], []
                elif kind == "final":
                    data = {**data, "sources": with_text(data.get("sources") or [], outcome.get("sources") or [])}
                    outcome["final"] = data
                elif kind == "error":
                    outcome["error"] = data
                run.publish(data)
        except IndexMissing as exc:
            outcome["error"] = _error("index_missing", str(exc), "".join(tokens))
            run.publish(outcome["error"])
        except BackendError as exc:
            outcome["error"] = _error(exc.kind, exc.message, "".join(tokens))
            run.publish(outcome["error"])
        except Exception as exc:  # never a stack trace on the page; the log has it
            log.exception("answer %s failed", run.message_id)
            outcome["error"] = _error("internal", f"The answer failed unexpectedly ({type(exc).__name__}). "
                                                  "The server log has the details.", "".join(tokens))
            run.publish(outcome["error"])
        if "final" not in outcome and "error" not in outcome:
            outcome["error"] = _error("interrupted", "The answer stopped before it was complete.", "".join(tokens))
            run.publish(outcome["error"])
        outcome["partial"] = "".join(tokens)
        outcome["wall_ms"] = round((time.monotonic() - run.submitted) * 1000, 1)
        try:
            stored = finish_message(run.message_id, outcome)
            daily.append(app.config["SETTINGS"].instance_dir, {
                "message": stored.id, "conversation": stored.conversation_id, "owner": stored.owner,
                "question": stored.question, "label": stored.label, "risk": stored.risk,
                "refused": stored.refused, "retried": stored.retried, "status": stored.status,
                "error": stored.error, "ms": stored.total_ms, "backend": stored.backend,
                "answer": stored.answer})
        except Exception:
            log.exception("storing answer %s failed", run.message_id)
            db.session.rollback()
        finally:
            db.session.remove()
        run.publish({"type": "stored", "message_id": run.message_id})
        run.close()

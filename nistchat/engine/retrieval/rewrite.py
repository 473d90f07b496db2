"""Query rewriting with the local reader (HyDE): when first-pass retrieval is weak, the reader
writes a short passage of the kind that would answer the question, in the documents' own terms,
and that passage is searched alongside the question.

Why: office users describe their situation in everyday words while the documents use terms of
art; a model bridges that where word rules shaped around known questions do not (docs/decisions.md,
"Query rewriting").

The rewrite is bounded: it runs only when the reader is idle (it borrows the reader queue and
never waits for it), stops at a deadline and keeps what was written by then, and is skipped
when retrieval is already strong. Its text, status and time are in the trace.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator

from ..backends.base import Reader
from ..backends.queue import ReaderQueue
from ..errors import BackendError
from ..text import neutralise

REWRITE_PROMPT = ("Write two sentences from a NIST AI risk management document that answer the question. "
                  "Use the formal terms such documents use. No preamble.")


@dataclass
class Rewrite:
    text: str
    status: str  # "done" | "deadline" (cut at the deadline) | "busy" (reader in use) | "error"
    ms: float
    note: str = ""

    def to_dict(self) -> dict:
        return {"text": self.text, "status": self.status, "ms": round(self.ms, 1), "note": self.note}


class Rewriter:
    """`Rewriter(reader, queue)(question, settings)` -> Rewrite; `settings` is `[retrieval.rewrite]`.
    `reader()` gives the reader (loaded on first use); the queue lends it only when no answer uses it."""

    def __init__(self, reader: Callable[[], Reader], queue: ReaderQueue):
        self.reader, self.queue = reader, queue

    def __call__(self, question: str, settings) -> Rewrite:
        start = time.perf_counter()
        with self.queue.borrow() as lent:
            if not lent:
                return Rewrite("", "busy", 0.0, "the reader is answering; searched the question alone")
            try:
                reader = self.reader()
                stream = reader.stream([{"role": "system", "content": REWRITE_PROMPT},
                                        {"role": "user", "content": neutralise(question)}],
                                       max_tokens=settings.max_tokens, temperature=0.0)
                pieces, status = until(stream, start + settings.deadline_s)
            except BackendError as exc:
                return Rewrite("", "error", (time.perf_counter() - start) * 1000, exc.line)
        return Rewrite("".join(pieces).strip(), status, (time.perf_counter() - start) * 1000)


def until(stream: Iterator[str], deadline: float) -> tuple[list[str], str]:
    """The pieces `stream` yields before `deadline` (a perf_counter time), and "done" or "deadline".

    The stream is read on a thread of its own, so a slow first token (a reader still loading, a
    busy machine) cannot hold the caller past the deadline; the thread closes the stream at its
    next piece, which stops the reader's generation."""
    pieces: queue.Queue = queue.Queue()
    stop = threading.Event()

    def pump() -> None:
        try:
            for piece in stream:
                pieces.put(piece)
                if stop.is_set():
                    break
        except BackendError as exc:
            pieces.put(exc)
        finally:
            close = getattr(stream, "close", None)
            if close:
                close()
            pieces.put(None)

    threading.Thread(target=pump, name="rewrite-stream", daemon=True).start()
    out: list[str] = []
    while True:
        try:
            item = pieces.get(timeout=max(0.0, deadline - time.perf_counter()))
        except queue.Empty:
            stop.set()
            return out, "deadline"
        if item is None:
            return out, "done"
        if isinstance(item, BackendError):
            raise item
        out.append(item)
        if time.perf_counter() >= deadline:
            stop.set()
            return out, "deadline"

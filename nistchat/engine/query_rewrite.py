"""Query rewriting with the local reader (HyDE): when first-pass retrieval is weak, the reader
writes a short passage of the kind that would answer the question, in the documents' own terms,
and that passage is searched alongside the question.

Why: office users describe their situation in everyday words ("HR wants to buy a screening tool")
while the documents use terms of art ("third-party entities"); a model bridges that where word
rules shaped around known questions do not (docs/decisions.md, "Query rewriting").

The rewrite is bounded: it runs only when the reader is idle (it borrows the reader queue and
never waits for it), stops at a deadline and keeps what was written by then, and is skipped
when retrieval is already strong. Its text, status and time are in the trace.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from .errors import BackendError
from .prompt import neutralise

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
    """`Rewriter(models, queue)(question, settings)` -> Rewrite; `settings` is `[retrieval.rewrite]`."""

    def __init__(self, models, queue):
        self.models, self.queue = models, queue

    def __call__(self, question: str, settings) -> Rewrite:
        start = time.perf_counter()
        with self.queue.borrow() as lent:
            if not lent:
                return Rewrite("", "busy", 0.0, "the reader is answering; searched the question alone")
            deadline = start + settings.deadline_s
            pieces: list[str] = []
            status = "done"
            try:
                reader = self.models.get("reader")
                stream = reader.stream([{"role": "system", "content": REWRITE_PROMPT},
                                        {"role": "user", "content": neutralise(question)}],
                                       max_tokens=settings.max_tokens, temperature=0.0)
                try:
                    for piece in stream:
                        pieces.append(piece)
                        if time.perf_counter() >= deadline:
                            status = "deadline"
                            break
                finally:
                    close = getattr(stream, "close", None)
                    if close:
                        close()  # stops the reader's generation at once
            except BackendError as exc:
                return Rewrite("".join(pieces).strip(), "error", (time.perf_counter() - start) * 1000,
                               f"{exc.kind}: {exc.message}")
        return Rewrite("".join(pieces).strip(), status, (time.perf_counter() - start) * 1000)

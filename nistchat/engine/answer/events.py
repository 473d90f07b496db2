"""The answer's event stream: one typed value per step, serialised only at the edges (SSE,
NDJSON, CLI JSON) by `to_dict()`. The contract (fields, order, error kinds) is docs/api.md's
"The answer's event stream".

    sources → [queue…] → prefill → token… → verdict… → [retry → prefill → token… → verdict…] → final
    or an error at any point (a partial answer travels in it, marked incomplete)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import ClassVar, Union

from ..types import Answer, Failure, Passage, Verdict, verdict_dict


class _Flat:
    """An event whose fields are its wire keys."""
    type: ClassVar[str]

    def to_dict(self) -> dict:
        return {"type": self.type, **asdict(self)}


@dataclass(frozen=True)
class Sources:
    """The passages the reader will be handed, numbered as it sees them (`n`)."""
    type: ClassVar[str] = "sources"
    passages: list[Passage]
    risk: str | None = None  # None for an answer that needs no passage (configured, small talk)
    searched_for: str = ""  # a follow-up's standalone question, or the English a question was searched as

    def to_dict(self) -> dict:
        out = {"type": self.type, "passages": [dict(p.to_dict(), n=i) for i, p in enumerate(self.passages, 1)]}
        if self.risk is not None:
            out.update(risk=self.risk, searched_for=self.searched_for)
        return out


@dataclass(frozen=True)
class Queue(_Flat):
    """Answers ahead of this one at the reader (0 once its turn has come)."""
    type: ClassVar[str] = "queue"
    ahead: int


@dataclass(frozen=True)
class Prefill(_Flat):
    """The reader starts reading a prompt: how long, and how long that should take here."""
    type: ClassVar[str] = "prefill"
    prompt_tokens: int
    attempt: int
    limit_s: float
    expected_s: float | None


@dataclass(frozen=True)
class Token(_Flat):
    type: ClassVar[str] = "token"
    text: str
    attempt: int


@dataclass(frozen=True)
class Checked:
    """One sentence's verdict (the wire's `verdict` event)."""
    type: ClassVar[str] = "verdict"
    verdict: Verdict
    attempt: int

    def to_dict(self) -> dict:
        return {"type": self.type, **verdict_dict(self.verdict), "attempt": self.attempt}


@dataclass(frozen=True)
class Retry(_Flat):
    type: ClassVar[str] = "retry"
    reason: str
    attempt: int


@dataclass(frozen=True)
class Final:
    type: ClassVar[str] = "final"
    answer: Answer

    def to_dict(self) -> dict:
        return {"type": self.type, **self.answer.to_dict()}


@dataclass(frozen=True)
class Error:
    type: ClassVar[str] = "error"
    failure: Failure

    def to_dict(self) -> dict:
        return {"type": self.type, **self.failure.to_dict()}


Event = Union[Sources, Queue, Prefill, Token, Checked, Retry, Final, Error]
EVENT_TYPES = tuple(e.type for e in (Sources, Queue, Prefill, Token, Checked, Retry, Final, Error))

"""The engine's typed failures, in one leaf module that every layer may import.

`BackendError` and its kinds match the `error` event's `kind` (unreachable | model_missing |
timeout | interrupted); web and CLI show `.message`, written for a person. `IndexMissing` says
what to run when no index has been built.
"""
from __future__ import annotations


def error_line(kind: str, message: str) -> str:
    """"kind: message": one failure named the same way in a trace note, an evaluation item and the CLI."""
    return f"{kind}: {message}"


class BackendError(RuntimeError):
    kind = "unreachable"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    @property
    def line(self) -> str:
        return error_line(self.kind, self.message)


class Unreachable(BackendError):
    kind = "unreachable"


class ModelMissing(BackendError):
    kind = "model_missing"


class TimedOut(BackendError):
    kind = "timeout"


class Interrupted(BackendError):
    kind = "interrupted"


class IndexMissing(RuntimeError):
    """No built index under data/index: the message tells the user what to run."""

"""Stream an answer from the active reader, with markdown headers and bold stripped as it streams.

Readers emit markup even when asked for plain text, and a marker can arrive split across tokens
("*" then "*Govern"), so the stripper holds back only the few characters that might still
become markup and releases them as soon as they cannot.
"""
from __future__ import annotations

import re
from typing import Iterator

_HEADER = re.compile(r"(\n)[ \t]{0,3}#{1,6}[ \t]+")
_MAYBE_HEADER = re.compile(r"[ \t]{0,3}#{1,6}[ \t]*")  # a line start that may still turn into a header
_TRAILING_STARS = re.compile(r"\*+\Z")


class MarkdownStripper:
    """Incremental filter: feed() pieces, then flush() once; the joined output has no headers/bold."""

    def __init__(self):
        self.pending = ""
        self.line_start = True

    def _clean(self, text: str) -> str:
        text = text.replace("**", "")
        lead = "\n" if self.line_start else "x"  # sentinel: a header can only start at a line start
        return _HEADER.sub(r"\1", lead + text)[1:]

    def _emit(self, text: str) -> str:
        if not text:
            return ""
        out = self._clean(text)
        self.line_start = text.endswith("\n")
        return out

    def feed(self, piece: str) -> str:
        text = self.pending + piece
        hold = 0
        stars = _TRAILING_STARS.search(text)
        if stars:
            hold = len(stars.group())
        last_line_start = text.rfind("\n") + 1
        if last_line_start > 0 or self.line_start:
            last_line = text[last_line_start:]
            if last_line and _MAYBE_HEADER.fullmatch(last_line):
                hold = max(hold, len(last_line))
        if hold:
            self.pending, text = text[-hold:], text[:-hold]
        else:
            self.pending = ""
        return self._emit(text)

    def flush(self) -> str:
        text, self.pending = self.pending, ""
        return self._emit(text)


def strip_markdown(text: str) -> str:
    """Whole-text form of the stream filter (same rules)."""
    stripper = MarkdownStripper()
    return stripper.feed(text) + stripper.flush()


def stream_answer(reader, messages: list[dict], *, max_tokens: int = 300, temperature: float = 0.1,
                  first_token_s: float | None = None) -> Iterator[str]:
    """Cleaned text pieces from the reader; BackendErrors from the reader pass through unchanged.
    `first_token_s` bounds the wait for the first piece (the prompt's reading, `backends.base.Pace`)."""
    stripper = MarkdownStripper()
    for piece in reader.stream(messages, max_tokens=max_tokens, temperature=temperature, first_token_s=first_token_s):
        out = stripper.feed(piece)
        if out:
            yield out
    tail = stripper.flush()
    if tail:
        yield tail

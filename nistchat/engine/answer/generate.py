"""Stream an answer from the active reader, with markdown headers and bold stripped as it streams,
ended where the reader starts writing the conversation's next turn.

Readers emit markup even when asked for plain text, and a marker can arrive split across tokens
("*" then "*Govern"), so the stripper holds back only the few characters that might still
become markup and releases them as soon as they cannot.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from .prompt import ASSISTANT, USER

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


# The conversation window's labels (prompt.history_window). A line the reader opens with one is
# the reader writing the next turn of the transcript ("User: sorry, I meant …"), not its answer.
TURN_LABELS = (f"{USER}:", f"{ASSISTANT}:")
_TURN_LINE = re.compile(r"\n[ \t]*(?:" + "|".join(TURN_LABELS) + ")")


class TurnCut:
    """Incremental filter: the reader's text up to a line opening with a turn label, where the
    answer ends (`done`). A line start that may still become a label is held back until it cannot.
    Seen in a walk: the answer to a correction went on as the person's next, invented, turn, which
    the page showed, the checker flagged, and the next turn's rewrite repeated."""

    def __init__(self):
        self.pending = ""
        self.line_start = True
        self.done = False
        self.said = False  # an "Assistant:" before any text is the reader labelling its own answer: dropped

    def feed(self, piece: str) -> str:
        if self.done:
            return ""
        text = ("\n" if self.line_start else "x") + self.pending + piece  # sentinel: a label only at a line start
        label = _TURN_LINE.search(text)
        if label and not self.said and label.group().strip() == TURN_LABELS[1] and not text[1:label.start()].strip():
            text = "x" + text[label.end():].lstrip(" \t")
            label = _TURN_LINE.search(text)
        if label:
            self.done, self.pending = True, ""
            return text[1:label.start()].rstrip(" \t")
        cut = text.rfind("\n")
        last = text[cut + 1:].lstrip(" \t")
        held = cut >= 0 and bool(last) and any(name.startswith(last) for name in TURN_LABELS)
        self.pending = text[cut + 1:] if held else ""
        out = text[1:cut + 1] if held else text[1:]
        self.said = self.said or bool(out.strip())
        self.line_start = held or text.endswith("\n")
        return out

    def flush(self) -> str:
        text, self.pending = ("" if self.done else self.pending), ""
        return text


def strip_markdown(text: str) -> str:
    """Whole-text form of the stream filter (same rules)."""
    stripper = MarkdownStripper()
    return stripper.feed(text) + stripper.flush()


LIMIT_MARGIN = 3  # tokens: the reader's text counted again may come a few short of what it sent


@dataclass
class Sent:
    """What the reader sent for one answer, before any cleaning: its text and how many pieces it
    came in (one a token for the backends here, fewer where a server joins tokens)."""
    raw: str = ""
    pieces: int = 0

    def add(self, piece: str) -> None:
        self.raw += piece
        self.pieces += 1

    def reached(self, limit: int, count_tokens=None) -> bool:
        """Whether the reader stopped at `limit` tokens rather than at an end of its own (its text is
        counted again only where its pieces do not settle it)."""
        if self.pieces >= limit - LIMIT_MARGIN:
            return True
        counted = 0
        if count_tokens is not None:
            try:
                counted = count_tokens(self.raw)
            except Exception:  # counting is a check; never fail an answer over it
                counted = 0
        return counted >= limit - LIMIT_MARGIN


def stream_answer(reader, messages: list[dict], *, max_tokens: int = 300, temperature: float = 0.1,
                  first_token_s: float | None = None, sent: Sent | None = None) -> Iterator[str]:
    """Cleaned text pieces from the reader; BackendErrors from the reader pass through unchanged.
    `first_token_s` bounds the wait for the first piece (the prompt's reading, `backends.base.Pace`);
    `sent` records what the reader sent before cleaning, to tell whether the length limit cut it."""
    stripper, turn = MarkdownStripper(), TurnCut()
    pieces = reader.stream(messages, max_tokens=max_tokens, temperature=temperature, first_token_s=first_token_s)
    try:
        for piece in pieces:
            if sent is not None:
                sent.add(piece)
            out = stripper.feed(turn.feed(piece))
            if out:
                yield out
            if turn.done:  # the answer ended; the reader stops with the stream
                break
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()
    tail = stripper.feed(turn.flush()) + stripper.flush()
    if tail:
        yield tail

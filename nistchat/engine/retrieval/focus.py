"""Focus: a follow-up's own words pick, among the passages found, the one whose heading they name.

Why: "and for sprocket audits?" (or "the 3rd one", the item it points at) is searched with the
question it leans on, whose words outnumber the turn's own, so the passages about the earlier
topic rank first and a small reader answers from the first passage it reads. When a passage's
own heading ("2.4. Sprocket Audits") is named by the turn's words, that passage is what the
turn asks about: it is moved first. The set of passages stays the same; only their order
changes (docs/decisions.md, "A follow-up reads the section it names first").
"""
from __future__ import annotations

import re
from dataclasses import replace

from ..types import Passage
from .query import word_set

_NUMBERING = re.compile(r"^\s*(?:[A-Z]\.)?\d+(?:\.\d+)*\.?\s+")  # "3.2.5 ", "2.4. ", "A.1.2. "


def heading(passage: Passage) -> str:
    """The passage's own heading: the last part of its section path, without its number."""
    return _NUMBERING.sub("", passage.section.rsplit(">", 1)[-1]).strip()


def names(focus: set[str], passage: Passage) -> int:
    """How many words `focus` shares with the passage's heading when it holds the whole heading
    ("sprocket audits": "Sprocket Audits"), or two words or more of it ("sprocket audits":
    "Sprocket Audits and Reviews"; one word alone, "audits", is too weak a sign); else 0."""
    words = word_set(heading(passage))
    return len(focus & words) if words and (words <= focus or len(focus & words) >= 2 and focus <= words) else 0


def focused(passages: list[Passage], focus: str) -> tuple[list[Passage], Passage | None]:
    """`passages` with the one whose heading `focus` names best (`names`; a tie: the earlier)
    moved to the front and all renumbered; with the moved passage (None when none is named, or
    it already came first)."""
    wanted = word_set(focus)
    shared = [names(wanted, p) for p in passages]
    hit = max(range(len(passages)), key=lambda i: (shared[i], -i), default=None)
    if not hit or not shared[hit]:  # none named, or the first already
        return passages, None
    ordered = [passages[hit], *passages[:hit], *passages[hit + 1:]]
    return [replace(p, rank=i) for i, p in enumerate(ordered, 1)], passages[hit]

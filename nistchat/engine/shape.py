"""How many items a list or table holds: "the six kinds of X" is answered by six items.

Retrieval lifts lists and tables of the size a question names: the fused RRF list in retriever.py
and the score blend in score_blend.py count a parent's items the same way, here.
"""
from __future__ import annotations

import re

from .query import NUMBER_WORDS
from .types import Parent

LIST_KINDS = ("list", "table")
_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+\S", re.MULTILINE)
_TABLE_ROW = re.compile(r"^\s*\|(?!\s*-{3})", re.MULTILINE)


def item_count(parent: Parent) -> int:
    """Items of a list parent, data rows of a table parent (header row not counted), else 0."""
    if parent.kind == "list":
        return len(_ITEM.findall(parent.text))
    if parent.kind == "table":
        return max(0, len(_TABLE_ROW.findall(parent.text)) - 1)
    return 0


def states_number(text: str, n: int) -> bool:
    """Does the text say the number ("six monitoring categories", "the 12 risks")? A list that
    announces its own length is the list a question naming that length is after."""
    words = [str(n)] + ([NUMBER_WORDS[n]] if n < len(NUMBER_WORDS) else [])
    return any(re.search(rf"(?<![\w.-]){w}(?![\w.-])", text, re.IGNORECASE) for w in words)

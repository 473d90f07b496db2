"""Cross-references: "(see Table 1)" in a retrieved passage points at the table that holds the detail.

Why: summaries and introductions say what a table contains ("six monitoring categories ... (Table
1)") in the words a question uses, while the table itself is terse cells that neither retriever
ranks well. Following an explicit reference from a well-ranked passage to the captioned table or
figure of the same document reaches it; the referenced parents become one more ranked list for the
fusion (retriever.py), in the order their referring passages ranked.
"""
from __future__ import annotations

import re

from .types import Parent

_CAPTION = re.compile(r"^\s*(Table|Figure)\s+(\d+)\b", re.IGNORECASE)
_REFERENCE = re.compile(r"\b(Table|Figure)\s+(\d+)\b", re.IGNORECASE)


class CaptionIndex:
    """(doc, "table"/"figure", number) -> the first parent whose text opens with that caption."""

    def __init__(self, parents: dict[str, Parent]):
        self.targets: dict[tuple[str, str, str], str] = {}
        for parent in parents.values():
            m = _CAPTION.match(parent.text)
            if m and parent.kind in ("table", "figure"):
                self.targets.setdefault((parent.doc, m.group(1).lower(), m.group(2)), parent.id)

    def __len__(self) -> int:
        return len(self.targets)

    def referenced(self, text: str, doc: str) -> list[str]:
        """Parent ids of the tables and figures of `doc` that `text` refers to, in order of mention."""
        out: list[str] = []
        for m in _REFERENCE.finditer(text):
            pid = self.targets.get((doc, m.group(1).lower(), m.group(2)))
            if pid and pid not in out:
                out.append(pid)
        return out

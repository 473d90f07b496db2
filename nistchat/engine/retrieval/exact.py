"""The exact list: children holding a question's identifier verbatim, or defining its acronym."""
from __future__ import annotations

import re

from ...config import RetrievalSettings
from ..text import identifier_regex
from ..types import Child, Ranked


class ExactSearch:
    """`search(identifiers, depth, bm25_by_row, definition)` -> the children that contain a query
    identifier verbatim (GOVERN 1.2, PW.1.1, MP-5.1-005), or that define a query acronym
    ("... (TEVV)"); ranked by how many of them they hold.

    Why: both retrievers blur identifiers (dense sees "GOVERN 1.2" near "GOVERN 1.3"; BM25 ranks
    the many children mentioning GOVERN), yet a verbatim id is the most precise signal a
    question can carry. Acronyms count only in their defining form, and only when rare enough
    in the corpus (acronym_max_df) to mean something, unless the question asks what an acronym
    stands for (`definition`): then the defining occurrence is the answer even for an acronym
    as common as "GAI" (all over AI 600-1, defined in a few places); only near-universal ones
    ("AI") stay out (definition_max_df). Ties (every row of a table whose caption holds the id)
    are broken by the child's BM25 score for the whole question, not by position in the corpus,
    so the row that also matches the question's words leads.
    """

    def __init__(self, children: list[Child], config: RetrievalSettings):
        self.ids = [c.id for c in children]
        self.config = config
        self._lower = [c.text.lower() for c in children]
        self._patterns: dict = {}

    def search(self, identifiers: list[str], depth: int, bm25_by_row: dict[int, float] | None = None,
               definition: bool = False) -> Ranked:
        patterns = [p for p in (self.pattern(i, definition) for i in identifiers) if p is not None]
        if not patterns:
            return []
        counts = []
        for i, text in enumerate(self._lower):
            n = sum(1 for parts, rx in patterns if all(x in text for x in parts) and rx.search(text))
            if n:
                counts.append((n, i))
        tie = bm25_by_row or {}
        ranked = sorted(counts, key=lambda c: (-c[0], -tie.get(c[1], 0.0), c[1]))[:depth]
        return [(self.ids[i], float(n)) for n, i in ranked]

    def pattern(self, ident: str, definition: bool = False):
        """(substrings for a cheap prefilter, compiled regex) for one identifier; None if uninformative.
        Cached: the acronym document-frequency check scans the corpus once per acronym."""
        if (ident, definition) in self._patterns:
            return self._patterns[(ident, definition)]
        low = ident.lower()
        parts = low.split()
        if any(ch.isdigit() for ch in ident):
            result = (parts, identifier_regex(ident))
        else:
            body = re.escape(low).replace(r"\ ", r"\s+")
            word = re.compile(rf"(?<![\w-]){body}(?![\w-])")
            df = sum(1 for t in self._lower if low in t and word.search(t)) / max(1, len(self._lower))
            limit = self.config.definition_max_df if definition else self.config.acronym_max_df
            result = None if df > limit else (
                parts, re.compile(rf"\({body}s?\)|(?<![\w-]){body}s?\s*(?::|=|stands for|means)"))
        self._patterns[(ident, definition)] = result
        return result

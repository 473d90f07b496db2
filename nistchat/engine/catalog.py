"""The names people use for the corpus documents, so a question that names one can be routed to it.

Why: "in the Generative AI Profile" or "per SP 800-218A" is the most precise scope a question can
carry, and neither retriever uses it: the AI RMF (100-1) and its profiles share whole passages of
vocabulary, so the named document's passage can lose to a sibling's. Names are the official
titles, their short forms and the publication numbers; generic phrases ("the framework", "the
plan") are left out because they name a document only in context. A site adds names for its own
documents under `[retrieval.doc_aliases]`.
"""
from __future__ import annotations

import re

KNOWN_NAMES: dict[str, tuple[str, ...]] = {
    "NIST.AI.100-1": ("AI RMF", "AI Risk Management Framework", "Artificial Intelligence Risk Management Framework"),
    "NIST.AI.100-2e2023": ("Adversarial Machine Learning taxonomy", "AML taxonomy", "AI 100-2"),
    "NIST.AI.100-5": ("Plan for Global Engagement on AI Standards", "Global Engagement on AI Standards",
                      "AI standards engagement plan"),
    "NIST.AI.600-1": ("Generative AI Profile", "Generative Artificial Intelligence Profile", "GenAI Profile",
                      "GAI Profile"),
    "NIST.AI.800-4": ("Monitoring of Deployed AI Systems", "Challenges to the Monitoring"),
    "NIST.SP.800-218A": ("SSDF", "Secure Software Development Framework", "Secure Software Development Practices"),
    "NIST.AI.CI-Profile-Concept-Note": ("Critical Infrastructure Profile", "CI Profile", "concept note"),
}


def number_of(doc_id: str) -> str | None:
    """'NIST.AI.600-1' -> '600-1', 'NIST.SP.800-218A' -> '800-218A'; None for ids without a number."""
    m = re.search(r"(\d{3}-\w+)$", doc_id)
    return m.group(1) if m else None


def _pattern(name: str) -> re.Pattern:
    body = r"[\s-]+".join(re.escape(w) for w in re.split(r"[\s-]+", name.strip()))
    return re.compile(rf"(?<![\w-]){body}(?![\w-])", re.IGNORECASE)


class Catalog:
    """doc id -> compiled name patterns for the documents actually in the index."""

    def __init__(self, doc_ids, extra: dict[str, list[str]] | None = None):
        self.patterns: dict[str, list[tuple[str, re.Pattern]]] = {}
        for doc in doc_ids:
            names = list(KNOWN_NAMES.get(doc, ())) + list((extra or {}).get(doc, []))
            number = number_of(doc)
            if number:
                names.append(number)
            self.patterns[doc] = [(n, _pattern(n)) for n in names]

    def named(self, text: str) -> list[str]:
        """Documents the text names, in catalog order; of overlapping matches only the longest counts."""
        spans: list[tuple[int, int, str]] = []
        for doc, pats in self.patterns.items():
            for _, rx in pats:
                spans += [(m.start(), m.end(), doc) for m in rx.finditer(text)]
        spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        kept: list[tuple[int, int, str]] = []
        for start, end, doc in spans:
            if not any(s <= start < e for s, e, _ in kept):
                kept.append((start, end, doc))
        found = {doc for _, _, doc in kept}
        return [doc for doc in self.patterns if doc in found]

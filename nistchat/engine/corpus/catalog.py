"""The corpus documents as the built index knows them, and the names people use for them.

Why read them from the index: a document added to the corpus then appears everywhere a list of
documents is shown (refusal messages, document filters) and can be named in a question, after
re-ingesting and with no code change.

Why route by name: "in the Generative AI Profile" or "per SP 800-218A" is the most precise scope a
question can carry, and neither retriever uses it: the AI RMF (100-1) and its profiles share whole
passages of vocabulary, so the named document's passage can lose to a sibling's. A document's
names are its publication number and its title (both from the index), plus the short forms in
ALIASES, the one table of names a title does not yield. Generic phrases ("the framework", "the
plan") are left out because they name a document only in context. A site adds names for its own
documents under `[retrieval.doc_aliases]`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from .documents import doc_short_name

# Names users call the corpus documents by that their titles do not contain whole.
ALIASES: dict[str, tuple[str, ...]] = {
    "NIST.AI.100-1": ("AI RMF", "AI Risk Management Framework"),
    "NIST.AI.100-2e2023": ("Adversarial Machine Learning taxonomy", "AML taxonomy", "AI 100-2", "adversarial ML report",
                           "AML report", "adversarial machine learning report"),
    "NIST.AI.100-5": ("Global Engagement on AI Standards", "AI standards engagement plan", "standards plan",
                      "global standards plan"),
    "NIST.AI.600-1": ("Generative AI Profile", "Generative Artificial Intelligence Profile", "GenAI Profile",
                      "GAI Profile"),
    "NIST.AI.800-4": ("Monitoring of Deployed AI Systems", "Challenges to the Monitoring", "monitoring report",
                      "AI monitoring report"),
    "NIST.SP.800-218A": ("SSDF", "Secure Software Development Framework", "Secure Software Development Practices"),
    "NIST.AI.CI-Profile-Concept-Note": ("Critical Infrastructure Profile", "CI Profile", "concept note"),
}


def number_of(doc_id: str) -> str | None:
    """'NIST.AI.600-1' -> '600-1', 'NIST.SP.800-218A' -> '800-218A'; None for ids without a number."""
    m = re.search(r"(\d{3}-\w+)$", doc_id)
    return m.group(1) if m else None


@dataclass(frozen=True)
class DocEntry:
    """One indexed document: its id and the title ingestion read from it."""
    id: str
    title: str = ""

    @property
    def own_title(self) -> str:
        """The title without the publication number and what precedes it ("NIST AI 800-4 Challenges
        to ..." -> "Challenges to ..."); '' when the title is only the number."""
        title = self.title.strip().rstrip(".").strip()
        number = number_of(self.id)
        if number and number in title:
            title = title.split(number, 1)[1]
        return title.strip(" :,-–")

    @property
    def label(self) -> str:
        """How a list of documents shows it: 'NIST AI 800-4, Challenges to the Monitoring of ...'."""
        if not number_of(self.id):
            return self.own_title or self.id
        short = doc_short_name(self.id)
        return f"{short}, {self.own_title}" if self.own_title else short

    @property
    def display(self) -> str:
        """How a page names it: 'AI RMF 1.0 (NIST AI 100-1)'. A title ending in its own short name
        in parentheses gives that short name; else the whole title; the publication number follows.
        Pages show this, never the file stem; ids stay in URLs and the API."""
        title = self.own_title
        short_name = re.search(r"\(([^()]{2,40})\)$", title)
        name = short_name.group(1) if short_name else title
        if not number_of(self.id):
            return name or self.id
        short = doc_short_name(self.id)
        return f"{name} ({short})" if name else short

    @property
    def names(self) -> list[str]:
        """Names that route a question to this document: aliases, the title (less a trailing
        parenthesis and a leading article), the publication number."""
        names = list(ALIASES.get(self.id, ()))
        title = re.sub(r"^(?:a|an|the)\s+", "", re.sub(r"\s*\([^)]*\)$", "", self.own_title), flags=re.IGNORECASE)
        if len(title.split()) >= 3 and title not in names:
            names.append(title)
        number = number_of(self.id)
        if number:
            names.append(number)
        return names


def documents(index) -> list[DocEntry]:
    """The documents of a built index in index order, each with the title its parents carry."""
    titles: dict[str, str] = {}
    for parent in index.parents.values():
        titles.setdefault(parent.doc, parent.title)
    return [DocEntry(doc, title) for doc, title in titles.items()]


def _pattern(name: str) -> re.Pattern:
    body = r"[\s-]+".join(re.escape(w) for w in re.split(r"[\s-]+", name.strip()))
    return re.compile(rf"(?<![\w-]){body}(?![\w-])", re.IGNORECASE)


class Catalog:
    """doc id -> compiled name patterns for the documents actually in the index."""

    def __init__(self, docs: Iterable[DocEntry | str], extra: dict[str, list[str]] | None = None):
        self.patterns: dict[str, list[tuple[str, re.Pattern]]] = {}
        self.display: dict[str, str] = {}  # doc id -> how a page (and the reader) names it
        for doc in docs:
            entry = doc if isinstance(doc, DocEntry) else DocEntry(doc)
            self.display[entry.id] = entry.display
            names = entry.names + list((extra or {}).get(entry.id, []))
            self.patterns[entry.id] = [(n, _pattern(n)) for n in names]

    @classmethod
    def from_index(cls, index, extra: dict[str, list[str]] | None = None) -> "Catalog":
        return cls(documents(index), extra)

    def named(self, text: str) -> list[str]:
        """Documents the text names, in catalog order; of overlapping matches only the longest counts."""
        found = {doc for _, _, doc in self._spans(text)}
        return [doc for doc in self.patterns if doc in found]

    def without_names(self, text: str, instead: str = "") -> str:
        """The text with the document names it holds cut out, each with its article, or put
        `instead` ("how does the AI RMF rate sprockets" -> "how does rate sprockets", or with "it"
        "how does it rate sprockets", a possessive "its"): what it asks, whichever document. A page shows
        it as what a follow-up was searched for, so a person reads it: "it" keeps it a sentence and
        is no word the search ranks by. Only the first name cut becomes `instead`; a name joined to
        another ("X and Y") goes with its "and"."""
        spans = sorted(self._spans(text), reverse=True)
        for start, end, _ in spans:
            article = re.search(r"\b(?:the|a|an)\s+$", text[:start], re.IGNORECASE)
            possessive = re.match(r"['’]s\b", text[end:])
            owns = possessive and re.match(r"\s+(?!(?:the|a|an)\b)[A-Za-z]", text[end + possessive.end():],
                                           re.IGNORECASE)
            word = instead if start == spans[-1][0] else ""
            word = word + "s" if word and owns else "" if possessive else word  # "its definition"; "X's the same" -> ""
            cut = article.start() if article else start
            joined = None if word else re.search(r"(?:,|\band|\bor)\s+$", text[:cut], re.IGNORECASE)
            text = text[:joined.start() if joined else cut] + word + text[end + (possessive.end() if possessive else 0):]
        return re.sub(r"\s{2,}", " ", text).strip()

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        spans: list[tuple[int, int, str]] = []
        for doc, pats in self.patterns.items():
            for _, rx in pats:
                spans += [(_with_series(text, m), m.end(), doc) for m in rx.finditer(text)]
        spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        kept: list[tuple[int, int, str]] = []
        for start, end, doc in spans:
            if not any(s <= start < e for s, e, _ in kept):
                kept.append((start, end, doc))
        return kept


_SERIES = re.compile(r"\b(?:NIST\s+(?:(?:SP|AI)\s+)?|(?:SP|AI)\s+)$", re.IGNORECASE)
_NIST = re.compile(r"\bNIST\s+$", re.IGNORECASE)


def _with_series(text: str, match: re.Match) -> int:
    """Where a name found at `match` starts, with the series before it: "NIST SP 800-218A" is one
    name, so cutting it leaves no "NIST SP" behind; before a name in words only "NIST" is
    ("the NIST AI RMF")."""
    series = (_SERIES if match.group(0)[:1].isdigit() else _NIST).search(text[:match.start()])
    return series.start() if series else match.start()

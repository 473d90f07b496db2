"""Stage 1: turn the user's question into the text both retrievers search with.

Why a stage of its own: identifiers such as GOVERN 1.2, PW.1.1, MP-5.1-005 or DP-SGD are the
strongest keyword signal in this corpus, so normalisation must never break them (no lowercasing,
no punctuation stripping here; BM25 tokenisation happens in the index's own tokenizer). A short
follow-up ("and the second one?") carries no topic of its own, so it is resolved against the
conversation first (followup.py) and searched for as that standalone question; the question
shown to the user is unchanged.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from ..text import FRAMEWORK_IDS, FUNCTION_ID, is_framework_id
from ..vocabulary import FOLLOW_UP_STOPWORDS

# Dashes, quotes and spaces that PDFs and phones produce, mapped to the ASCII the corpus uses.
_TRANSLATE = str.maketrans({
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " ", "\u200b": "",
})

# Acronyms, possibly hyphenated (GAI, TEVV, DP-SGD, CBRN, AI RMF's "RMF").
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]*[A-Z](?:-[A-Z0-9]+)*s?\b")

# Asks for more of what was just said, naming nothing ("give me an example", "such as?", "go on"):
# with a conversation before it, never small talk, and it leans on the turn before.
_MORE = (r"(tell|say) me more|more on|elaborate|explain (that|this|it)|"
         r"(give|show) me (an? |some |more )?(examples?|details?|more)|(an?|any|some|for|more) (examples?|details?)|"
         r"examples?|details?|such as|like what|in what way|go on|(can|could) you (expand|elaborate)")
ASKS_FOR_MORE = re.compile(rf"^(?:{_MORE})\b", re.IGNORECASE)
# Words that, leading a short question, mark it as a follow-up leaning on the previous turn.
_FOLLOW_UP_START = re.compile(
    r"^(and|but|also|so|then|what about|how about|and what|and how|what else|why|how so|"
    rf"which one|the (first|second|third|fourth|fifth|sixth|last|other|next|previous)|same for|{_MORE})\b",
    re.IGNORECASE)
_PRONOUN = re.compile(r"\b(it|its|they|them|their|this|that|these|those|one|ones|the latter|the former)\b",
                      re.IGNORECASE)
# A question asking what an acronym means: then its defining occurrence ("... (GAI)") is the answer
# even when the acronym itself is everywhere in the corpus.
_DEFINITION_ASK = re.compile(
    r"\b(stands?\s+for|abbreviat\w*|acronyms?|initialisms?|short\s+for|spelled\s+out|refers?\s+to|"
    r"expan(?:d|ds|sion)|mean(?:s|ing)?)\b|^\s*what\s+(?:is|are)\s+(?:an?\s+|the\s+)?[A-Z][A-Z0-9-]*[A-Z]s?\b",
    re.IGNORECASE)
# Numbers written as words, by value (NUMBER_WORDS[6] == "six"); verify.py reads the same table.
NUMBER_WORDS = tuple("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                     "fifteen sixteen seventeen eighteen nineteen twenty".split())
_NUMBER_VALUE = {w: i for i, w in enumerate(NUMBER_WORDS)}
# "the six kinds", "12 risks", "three categories": a small count followed by a word, not part of an id
# ("800-4", "1.2") or a year.
_COUNT = re.compile(r"(?<![\w.-])(\d{1,2}|" + "|".join(NUMBER_WORDS) + r")(?![\w.-])\s+[A-Za-z]", re.IGNORECASE)
FOLLOW_UP_MAX_CONTENT_WORDS = 3  # a question with more topic words than this stands on its own


@dataclass
class Query:
    original: str
    text: str  # normalised question (what the reader and reranker see)
    search_text: str  # what dense and BM25 search with (text, or a follow-up's resolved question)
    identifiers: list[str] = field(default_factory=list)
    rewritten: bool = False
    note: str = ""
    asks_definition: bool = False  # "what does X stand for / mean / refer to", "what is X"
    wants_list: bool = False  # "list the X", "what are the six X", "what kinds of X": a list/table answers it
    count: int | None = None  # the number of items the question names ("the six kinds" -> 6)

    @property
    def list_count(self) -> int | None:
        """The count a list answer should have: `count`, for a list question only."""
        return self.count if self.wants_list else None

    def to_dict(self) -> dict:
        return {"original": self.original, "text": self.text, "search_text": self.search_text,
                "identifiers": self.identifiers, "rewritten": self.rewritten, "note": self.note,
                "asks_definition": self.asks_definition, "wants_list": self.wants_list, "count": self.count}


def normalise(question: str) -> str:
    """NFKC, ASCII dashes/quotes, one space between words, and canonical framework ids."""
    text = unicodedata.normalize("NFKC", question or "").translate(_TRANSLATE)
    text = re.sub(r"\s+", " ", text).strip()
    # "govern1.2", "Govern 1.2", "GOVERN-1.2" all become "GOVERN 1.2" as the AI RMF writes it.
    return FUNCTION_ID.sub(lambda m: f"{m.group(1).upper()} {m.group(2)}", text)


def identifiers(text: str) -> list[str]:
    """Identifiers and acronyms in the order they appear, without duplicates."""
    found: list[tuple[int, str]] = []
    for pattern in (*FRAMEWORK_IDS, _ACRONYM):
        for m in pattern.finditer(text):
            if not any(s <= m.start() < s + len(v) for s, v in found):
                found.append((m.start(), m.group(0)))
    seen, out = set(), []
    for _, value in sorted(found):
        if value not in seen:
            seen.add(value)
            out.append(value)
    return out


def framework_ids(text: str) -> list[str]:
    """The framework identifiers a text names (GOVERN 1.2, PW.4.3, MP-5.1-005): no acronyms, no bare numbers."""
    return [i for i in identifiers(text) if is_framework_id(i)]


def asks_definition(text: str) -> bool:
    """Does the question ask what an acronym in it stands for? (It must contain one.)"""
    return bool(_DEFINITION_ASK.search(text)) and any(_ACRONYM.fullmatch(i) for i in identifiers(text))


def wants_list(text: str) -> bool:
    """A list or enumeration question, by the risk table's own patterns (one definition of "list")."""
    from .risk import classify

    risk = classify(text)
    return risk.is_list or "enumeration" in risk.kinds


def stated_count(text: str) -> int | None:
    """The item count a question names ("the six kinds" -> 6), if any (2..30)."""
    for m in _COUNT.finditer(text):
        word = m.group(1).lower()
        before = text[: m.start()].split()
        if word.isdigit() and len(before) > 1 and before[-1][:1].isupper():
            continue  # a number after a mid-sentence name is part of it: "SOC 2", "Article 22", "Top 10"
        n = int(word) if word.isdigit() else _NUMBER_VALUE[word]
        if 2 <= n <= 30:
            return n
    return None


def _content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[A-Za-z0-9][\w.-]*", text) if w.lower() not in FOLLOW_UP_STOPWORDS]


def word_set(text: str) -> set[str]:
    """The content words of `text`, lowercased, a plural's "s" dropped: what a turn and a heading share."""
    return {w.lower().rstrip("s") for w in _content_words(text)}


def is_follow_up(text: str) -> bool:
    """A short question that opens like a follow-up or leans on a pronoun, with no id of its own."""
    if identifiers(text) and not _FOLLOW_UP_START.match(text):
        return False
    content = _content_words(text)
    if len(content) > FOLLOW_UP_MAX_CONTENT_WORDS:
        return False
    return bool(_FOLLOW_UP_START.match(text) or _PRONOUN.search(text) or not content)


def prepare(question: str, *, search_text: str | None = None, note: str = "") -> Query:
    """Normalise the question; `search_text` is what retrieval searches for instead, when the turn
    was resolved against the conversation (followup.resolve: a follow-up's standalone question)."""
    text = normalise(question)
    shape = {"asks_definition": asks_definition(text), "wants_list": wants_list(text), "count": stated_count(text)}
    searched = normalise(search_text) if search_text is not None else text
    return Query(question, text, searched, identifiers(searched), searched != text, note, **shape)

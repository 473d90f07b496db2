"""Small text helpers the engine shares: sentences, token estimates, framework identifiers, word
n-grams. One implementation per job, so a fix lands everywhere; where callers need different
behaviour, a named parameter says which (each variant feeds something measured, so merging them
would change the index, the context or the verdicts).
"""
from __future__ import annotations

import re

from .vocabulary import ACTION_ID, DOTTED_ID, FRAMEWORK_IDS, FUNCTION_ID

# --------------------------------------------------------------------------------------------
# Framework identifiers: GOVERN 1.2, MAP 5.1, MEASURE 2.11, MANAGE 4 (function + number),
# SSDF practice/task ids PW.1.1, PO.1.2.R1, GenAI Profile action ids MP-5.1-005, GV-1.2-001.


# A label in running text: an upper-case word and a number ("GOVERN 1.2.", "PW 1.").
_LABEL_WORD = re.compile(r"^[A-Z]{2,}[A-Z-]*$")
_LABEL_NUM = re.compile(r"^\(?\d+(?:\.\d+)*\.?$")


def is_framework_id(token: str) -> bool:
    """The whole token is a framework identifier (not an acronym, not a bare number)."""
    return any(p.fullmatch(token) for p in FRAMEWORK_IDS)


def ends_with_label(words: list[str]) -> bool:
    """The last two words are an identifier label ("GOVERN 1.2."), whose period ends no sentence."""
    return len(words) >= 2 and bool(_LABEL_NUM.match(words[-1])) and bool(_LABEL_WORD.match(words[-2].strip("(")))


def identifier_regex(ident: str) -> re.Pattern:
    """An identifier found verbatim: any run of spaces where it has one, not inside a longer id
    ("GOVERN 1.2" matches neither "GOVERN 1.2.3" nor "GOVERN 1.20"). Case-insensitive."""
    body = r"\s+".join(re.escape(word) for word in ident.split())
    return re.compile(rf"(?<![\w.-]){body}(?![\w-]|\.\d)", re.IGNORECASE)


# --------------------------------------------------------------------------------------------
# Sentences

# Words whose trailing period never ends a sentence (lower-cased, with their periods).
ABBREVIATIONS = {
    "e.g.", "i.e.", "u.s.", "u.k.", "e.u.", "mr.", "mrs.", "ms.", "dr.", "prof.", "st.", "no.", "nos.", "vs.",
    "fig.", "figs.", "sec.", "secs.", "p.", "pp.", "al.", "approx.", "inc.", "corp.", "ltd.", "co.", "vol.",
    "ch.", "art.", "eq.", "ref.", "cf.", "ca.", "jan.", "feb.", "mar.", "apr.", "jun.", "jul.", "aug.",
    "sep.", "sept.", "oct.", "nov.", "dec.", "est.", "dept.", "govt.", "n.d.", "a.k.a.",
}
LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.)]|\(?[a-z][.)])\s+")
CITATION_MARK = r"\[\d+(?:\s*[,;–-]\s*\d+)*\]"  # [2], [1, 3], [2-4]

# The line that quotes the English sentence an answer in another language rests on (answer/
# language.py): the reader translates, the checker and the person checking the source read English.
SOURCE_LINE = {"German": 'Quelle (englisches Original): "{quote}" [{n}]',
               "Spanish": 'Fuente (original en inglés): "{quote}" [{n}]',
               "French": 'Source (original en anglais) : "{quote}" [{n}]'}
_SOURCE_UNDER = re.compile(r"\s*(?:" + "|".join(re.escape(line.split('"{quote}"')[0]) for line in SOURCE_LINE.values())
                           + r')"[^\n]*"\s*' + CITATION_MARK + r"\s*$")


def without_source_line(answer: str) -> str:
    """`answer` less the source line quoted under it: what a rewrite of it should rewrite (given
    both, a small reader copied the quote too)."""
    return _SOURCE_UNDER.sub("", answer)


_END_MARK = re.compile(r"\s*" + CITATION_MARK + r"\s*$")


def without_end_mark(sentence: str) -> str:
    """The sentence less the citation mark it ends with: where a page shows the mark beside it as a
    link (a checked sentence), the source line's own "[n]" would be shown twice."""
    return _END_MARK.sub("", sentence)


_END = re.compile(r"[.!?]+")
_AFTER_END = re.compile(r"[\"'”’)\]]*(?:\s*" + CITATION_MARK + r")*")
_NEXT_START = re.compile(r"\s+(?=[A-Z0-9\"“'(\[])")
# Chunk boundaries: a shorter abbreviation list, as lookbehinds over whitespace-collapsed prose.
_CHUNK_ABBREV = r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bet al\.)(?<!\bvs\.)(?<!\bFig\.)(?<!\bNo\.)(?<!\bSec\.)(?<!\b[A-Z]\.)"
_CHUNK_END = re.compile(_CHUNK_ABBREV + r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_PLAIN_END = re.compile(r"(?<!\bet al\.)(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_MESSAGE_END = re.compile(r"(?<![^\w]\w[.!?])(?<=[.!?])\s+")
STYLES = ("answer", "chunk", "plain", "message")


def _is_abbreviation_end(line: str, dot_end: int) -> bool:
    """True when the period(s) ending at `dot_end` belong to an abbreviation or an identifier."""
    words = line[:dot_end].split()
    if not words:
        return True
    last = words[-1].lower().lstrip("(\"'“")
    if last in ABBREVIATIONS:
        return True
    if re.fullmatch(r"(?:[a-z]\.){1,3}", last):  # initials such as "J." or "U.S." spelled unusually
        return True
    return ends_with_label(words)  # "GOVERN 1.2." is an identifier label, not the end of a sentence


def line_sentences(line: str) -> list[str]:
    """The sentences of one line of an answer or passage ("answer" style, list markers not special)."""
    sentences, start = [], 0
    for m in _END.finditer(line):
        if m.group().startswith(".") and _is_abbreviation_end(line, m.end()):
            continue
        end = m.end() + len(_AFTER_END.match(line, m.end()).group())
        nxt = _NEXT_START.match(line, end)
        if not nxt:
            continue
        piece = line[start:end].strip()
        if piece:
            sentences.append(piece)
        start = nxt.end()
    tail = line[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def split_sentences(text: str, style: str = "answer") -> list[str]:
    """Sentences in order, in one of three styles:

    - "answer" (drafts and passages checked claim by claim): line by line, each list item whole,
      abbreviations and identifier labels ("GOVERN 1.2.") kept, a citation after the period kept
      with the sentence before it;
    - "chunk" (chunk boundaries): whitespace collapsed, a shorter abbreviation list;
    - "plain" (trim units of a long line): any .!? before a capital, the text kept verbatim;
    - "message" (what a person typed, often all in lower case): any .!? before a space, but not
      after a one-letter word ("p. ej.", "e.g.").

    Four styles, not one, because each is measured where it is used: changing "chunk" re-chunks the
    index, "plain" changes trimmed passages, "answer" changes verdicts."""
    if style == "chunk":
        text = re.sub(r"\s+", " ", text).strip()
        return [s.strip() for s in _CHUNK_END.split(text) if s.strip()] if text else []
    if style == "plain":
        return [s for s in _PLAIN_END.split(text) if s.strip()]
    if style == "message":
        return [s.strip() for s in _MESSAGE_END.split(text or "") if s.strip()]
    if style != "answer":
        raise ValueError(f"sentence style must be one of {STYLES}, got {style!r}")
    out = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        if LIST_MARKER.match(line):
            out.append(line.strip())  # a list item stays whole even if it has several short sentences
            continue
        out.extend(line_sentences(line))
    return out


# --------------------------------------------------------------------------------------------
# Token estimates (no tokenizer needed)

_PIECE = re.compile(r"\w+|[^\w\s]")
TOKEN_UNITS = ("words", "pieces")


def estimate_tokens(text: str, *, by: str) -> int:
    """Reader tokens, estimated without a tokenizer, counted `by`:

    - "words": word count x 1.3, plus one (chunk sizes: the index is built with it);
    - "pieces": words and punctuation marks (the context budget, from passage trimming to the
      prompt), close to the reader's own tokenizer.

    Kept apart because chunk sizes were tuned in words; counting chunks in pieces would change the
    index. Retrieval and the prompt count the budget in the same unit, so the prompt drops none of
    the passages retrieval chose (docs/decisions.md, "Token estimates and sentence splitting")."""
    if by == "words":
        return int(len(text.split()) * 1.3) + 1
    if by == "pieces":
        return len(_PIECE.findall(text))
    raise ValueError(f"token unit must be one of {TOKEN_UNITS}, got {by!r}")


def count_tokens(text: str) -> int:
    """Tokens in the context budget's unit: retrieval fits the passages into `answer.context_tokens`
    with it, and the prompt checks them with it, so both see the same passages."""
    return estimate_tokens(text, by="pieces")


# --------------------------------------------------------------------------------------------
# Word n-grams

def ngrams(words: list[str], n: int = 3, *, short_whole: bool = False) -> list[tuple[str, ...]]:
    """Word n-grams in order. `short_whole`: a text of fewer than n words (but some) is one n-gram of
    all its words, so trim scoring can still match a short unit; the quote check wants none."""
    if short_whole and 0 < len(words) < n:
        return [tuple(words)]
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


# -- user text as data in a prompt (the question, past turns, passages)
_CITATION = re.compile(r"\[\s*(\d{1,6})\s*\]")
_LABEL = re.compile(r"(?i)\b(context|question|passages?|document|claim|answer|earlier in this conversation)\s*:")
BLOCK_TAG = re.compile(r"<\s*/?\s*(passages|conversation)\s*>", re.I)


def unblock(text: str) -> str:
    """No text can open or close one of the prompt's blocks: `</passages>` becomes `‹/passages›`."""
    return BLOCK_TAG.sub(lambda m: "‹" + m.group(0)[1:-1] + "›", text)


def unlabel(text: str) -> str:
    """No text can start a section of the prompt: `Question:` becomes `Question -`."""
    return unblock(_LABEL.sub(lambda m: f"{m.group(1)} -", text))


def neutralise(text: str) -> str:
    """User text as data: `[3]` becomes `(3)`, `Context:` becomes `Context -`, block tags are
    broken. Used on the question and on the conversation window fed back to the reader (whose
    old citation numbers mean other passages now)."""
    return unlabel(_CITATION.sub(r"(\1)", text))

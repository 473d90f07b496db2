"""An answer made whole after the reader stops: the unfinished end a length limit left is dropped,
and a list drawn from a passage's list is named to the end from that passage.

A small reader writing a long list, each item explained, meets `answer.max_tokens` part-way and
stops mid-word; it also skips items of the list in front of it. Both showed on the page as an
answer that looked whole. Naming the rest costs no reader call, and each added line is the
passage's own words, cited (docs/decisions.md, "An answer cut at its length limit").
"""
from __future__ import annotations

import re

from ..retrieval.expand import ELLIPSIS
from ..retrieval.followup import LIST_LINE, answer_items, item_name, passage_list
from ..text import line_sentences
from ..verification.premise import stems
from .language import WORDING

CUT_NOTE = "The answer reached its length limit; its unfinished end was left out."
REST_REASON = "names an item of the list in passage {n}"
LIST_SHARE = 0.75  # of the answer's items that the passage's list holds, for the answer to be drawn from it
LIST_MIN = 3  # items the answer and the passage's list share, at least: two may meet by chance
_ENDED = re.compile(r"[.!?:;)|\]\"”»]\s*$")
# A question asking for some items of a list ("which of them …", "which X concern Y") is answered by a part.
_PART = re.compile(r"\bwhich of\b|\b(?:one|two|three|some|a few)\b(?: of)?\s+(?:the|its|their)\b|\bexamples?\b",
                   re.IGNORECASE)


def without_unfinished(text: str) -> str:
    """The text less what the limit left unfinished: the last line's last sentence when it has no
    end; a list line cut inside its explanation keeps its item's name ("6. Sprocket drift"). An
    answer that is one unfinished sentence stays as it is: cut short, it still says something."""
    body = text.rstrip()
    if not body or _ENDED.search(body):
        return body
    head, _, last = body.rpartition("\n")
    item = LIST_LINE.match(last)
    content = item.group(1) if item else last
    sentences = line_sentences(content)
    if len(sentences) > 1:
        kept = last[:last.rfind(sentences[-1])].rstrip()
    else:
        name = item_name(content) if item else ""
        kept = last[:item.start(1)] + name if name and name != content.strip() else ""
    return f"{head}\n{kept}".strip() if kept else head.rstrip() or body


def _same(a: str, b: str) -> bool:
    x, y = stems(a), stems(b)
    return bool(x and y) and (x <= y or y <= x)


def _within(name: str, text: str) -> bool:
    """Whether the text holds the name as written (case and spacing aside)."""
    return f" {_flat(name)} " in f" {_flat(text)} "


def _flat(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def list_rest(answer: str, shown: list[str], whole: list[str], question: str, *, selection: bool = False,
              count: int | None = None) -> tuple[int, list[str]]:
    """(n, names): the items of passage n's list that the answer, drawn from that list, left out
    because retrieval never showed them (`shown`: each passage as trimmed to the context budget;
    `whole`: as its section has it), at most as many as a `count` the question asks for still
    lacks. (0, []) when it drew from no list, when it left out only items it was shown (it chose),
    or when the question asks for a part of a list (`selection`, "which of …", a few examples,
    the count it gave)."""
    items = answer_items(answer)
    if len(items) < 2 or (count is not None and count <= len(items)) or _PART.search(question) or selection:
        return 0, []
    best: tuple[int, int, list[str]] = (0, 0, [])
    for n, (seen, text) in enumerate(zip(shown, whole), 1):
        if ELLIPSIS not in seen:
            continue
        names = [name for name in dict.fromkeys(passage_list(text)[0]) if name]
        drawn = sum(any(_same(item, name) for name in names) for item in items)
        if drawn < max(LIST_MIN, LIST_SHARE * len(items)):
            continue
        rest = [name for name in names if not any(_same(name, item) for item in items) and not _within(name, seen)]
        if rest and drawn > best[1]:
            best = (n, drawn, rest)
    return best[0], best[2][:count - len(items)] if count else best[2]


def rest_lines(n: int, names: list[str], language: str = "") -> list[str]:
    """The lines that name a list's rest under the answer, each cited, led in in the answer's
    language (the names stay as the passage writes them)."""
    return [(WORDING.get(language) or WORDING[""])["rest"].format(n=n), *(f"- {name} [{n}]" for name in names)]

"""Citations a user can follow: every [n] in an answer must name a passage that was shown.

Small readers invent numbers ([7] when six passages were shown). An out-of-range mark is repaired
to the passage the verifier found supporting that sentence, or dropped when none did.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .text import split_sentences
from .types import Passage, Verdict
from .verify import citations as cited_numbers

_GROUP = re.compile(r"\s?\[(\d+(?:\s*[,;–-]\s*\d+)*)\]")


@dataclass
class Repair:
    text: str
    dropped: list[int] = field(default_factory=list)  # out-of-range numbers removed
    mapped: list[tuple[int, int]] = field(default_factory=list)  # (bad number, passage it now points to)

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.mapped)


def invalid(text: str, n_passages: int) -> list[int]:
    """Cited numbers that do not point to a shown passage, in order of appearance."""
    return [n for s in split_sentences(text) for n in cited_numbers(s) if not 1 <= n <= n_passages]


def sentences_with_invalid(text: str, n_passages: int) -> list[str]:
    return [s for s in split_sentences(text) if any(not 1 <= n <= n_passages for n in cited_numbers(s))]


def _fix_group(match: re.Match, n_passages: int, support: int | None, repair: Repair) -> str:
    kept = []
    for n in cited_numbers(f"[{match.group(1)}]"):
        if 1 <= n <= n_passages:
            kept.append(n)
        elif support is not None:
            kept.append(support)
            repair.mapped.append((n, support))
        else:
            repair.dropped.append(n)
    kept = list(dict.fromkeys(kept))
    if not kept:
        return ""
    lead = " " if match.group(0).startswith(" ") else ""
    original = [n for n in cited_numbers(f"[{match.group(1)}]")]
    if kept == original:
        return match.group(0)
    return lead + "".join(f"[{n}]" for n in kept)


def repair(text: str, n_passages: int, verdicts: list[Verdict] | None = None) -> Repair:
    """Rewrite out-of-range citations: map to the sentence's supporting passage, else drop them."""
    support = {v.text: v.passage for v in verdicts or [] if v.supported and v.passage}
    result = Repair(text)
    out, cursor = [], 0
    for sentence in split_sentences(text):
        at = text.find(sentence, cursor)
        if at < 0:
            continue
        if all(1 <= n <= n_passages for n in cited_numbers(sentence)):
            continue
        fixed = _GROUP.sub(lambda m: _fix_group(m, n_passages, support.get(sentence), result), sentence)
        out.append(text[cursor:at])
        out.append(fixed)
        cursor = at + len(sentence)
    out.append(text[cursor:])
    result.text = "".join(out)
    return result


def source_list(passages: list[Passage], answer: str = "") -> list[dict]:
    """Sources as shown to the user: doc id, title, section, page, and whether the answer cites it."""
    cited = {n for s in split_sentences(answer) for n in cited_numbers(s)}
    return [{"rank": i, "id": p.id, "doc": p.doc, "title": p.title, "section": p.section, "page": p.page,
             "kind": p.kind, "score": p.score, "cited": i in cited}
            for i, p in enumerate(passages, 1)]

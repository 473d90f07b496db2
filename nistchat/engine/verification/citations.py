"""Citations a user can follow: every [n] in an answer must name a passage that was shown.

Small readers invent numbers ([7] when six passages were shown). An out-of-range mark is repaired
to the passage the verifier found supporting that sentence, or dropped when none did.

Small readers also leave most sentences without a mark, though the prompt asks for them. Where
the checker matched a sentence to a passage (a supported verdict, or, for an answer that was not
verified, the free quote check), that passage is shown as the sentence's mark, visibly distinct
from a mark the reader wrote: `checker_marks` finds them and `source_list` stores them with each
source (`checker_sentences`), so the page and the API show the same.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..text import split_sentences
from ..types import Passage, Source, Verdict
from .verify import candidate_passages, claim_text, in_quote, is_checkable, quoted_by
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
        fixed = _GROUP.sub(lambda m: m.group(0) if in_quote(sentence, m.start(1))  # the document's own marks stay
                           else _fix_group(m, n_passages, support.get(sentence), result), sentence)
        out.append(text[cursor:at])
        out.append(fixed)
        cursor = at + len(sentence)
    out.append(text[cursor:])
    result.text = "".join(out)
    return result


def has_mark(sentence: str, n_passages: int) -> bool:
    """The reader cited a shown passage in this sentence."""
    return any(1 <= n <= n_passages for n in cited_numbers(sentence))


def checker_marks(answer: str, passages: list[Passage], verdicts: list[Verdict] | None = None,
                  *, quote_check: bool = True) -> dict[str, int]:
    """Sentence -> passage number, for the answer's sentences that carry no mark of the reader's
    but that the checker matched to a passage: its supported verdict's passage, else (when
    `quote_check`, i.e. the sentence was not judged) the passage it quotes. A sentence the checker
    found unsupported gets no mark."""
    judged = {v.text: v for v in verdicts or []}
    marks: dict[str, int] = {}
    for sentence in split_sentences(answer):
        if has_mark(sentence, len(passages)) or not is_checkable(sentence):
            continue
        verdict = judged.get(sentence)
        if verdict is not None:
            if verdict.supported and verdict.passage and 1 <= verdict.passage <= len(passages):
                marks[sentence] = verdict.passage
            continue
        if quote_check:
            n = quoted_by(claim_text(sentence), passages, candidate_passages(sentence, passages, len(passages)))
            if n is not None:
                marks[sentence] = n
    return marks


def marked_share(answer: str, n_passages: int, marks: dict[str, int]) -> tuple[int, int, int]:
    """(checkable sentences, with a mark of the reader's, with the checker's mark) of an answer."""
    sentences = [s for s in split_sentences(answer) if is_checkable(s)]
    return (len(sentences), sum(has_mark(s, n_passages) for s in sentences),
            sum(s in marks for s in sentences))


def source_list(passages: list[Passage], answer: str = "", marks: dict[str, int] | None = None) -> list[Source]:
    """Sources as shown to the user: doc id, title, section, page, whether the answer cites it, the
    answer's sentences the checker matched to it (`checker_sentences`, shown as its marks), and the
    passage's text (a stored answer shows the supporting passage on expand)."""
    cited = {n for s in split_sentences(answer) for n in cited_numbers(s)}
    matched: dict[int, list[str]] = {}
    for sentence, n in (marks or {}).items():
        matched.setdefault(n, []).append(sentence)
    return [Source(rank=i, id=p.id, doc=p.doc, title=p.title, section=p.section, page=p.page, kind=p.kind,
                   score=p.score, cited=i in cited or i in matched, checker_sentences=matched.get(i, []), text=p.text)
            for i, p in enumerate(passages, 1)]

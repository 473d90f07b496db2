"""👎 answers become evaluation items: an admin writes the answer the question should have had
and copies the evidence from the document viewer; the items form the `reported` set, stored in
the database and written as a golden-format JSONL file whenever a run reads it, so
`nistchat eval answers --set reported` and the /evals page score it like the other sets."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..engine.evaluation import SET_FILES, match_norm
from ..extensions import db
from ..models import Feedback, ReportedItem
from ..web import clean_text

# The golden sets' categories (data/eval/README.md); a negative item is a question the documents
# do not answer, so it has no document, evidence or answer.
CATEGORIES = ("factual", "reasoning", "edge", "ambiguity", "table", "acronym", "paraphrase", "negative")
MAX_EVIDENCE = 3
EVIDENCE_CHARS = (25, 200)


class BadItem(ValueError):
    """An item that cannot be stored; the message says what to fix."""


@dataclass(frozen=True)
class ItemDraft:
    question: str
    doc: str | None
    category: str
    evidence: tuple[str, ...]
    answer: str

    @classmethod
    def from_form(cls, form, library) -> "ItemDraft":
        """Checked as the golden sets are: evidence copied verbatim from the chosen document
        (whitespace and case aside), 1-3 strings of 25-200 characters, each on its own line."""
        question = clean_text(form.get("question")).strip()
        category = form.get("category", "")
        if not question or len(question) > 2000:
            raise BadItem("Write the question (at most 2,000 characters).")
        if category not in CATEGORIES:
            raise BadItem(f"Choose a category: {', '.join(CATEGORIES)}.")
        if category == "negative":
            return cls(question, None, category, (), "")
        doc = form.get("doc", "")
        if library is None or doc not in library.entries:
            raise BadItem("Choose the document that answers the question.")
        answer = clean_text(form.get("answer")).strip()
        if not answer:
            raise BadItem("Write the answer the question should have had.")
        evidence = tuple(e.strip() for e in clean_text(form.get("evidence")).split("\n") if e.strip())
        if not 1 <= len(evidence) <= MAX_EVIDENCE:
            raise BadItem(f"Give 1 to {MAX_EVIDENCE} evidence strings, one per line, copied from the document.")
        text = match_norm(" ".join(p.text for p in library.parents.values() if p.doc == doc))
        for line in evidence:
            if not EVIDENCE_CHARS[0] <= len(line) <= EVIDENCE_CHARS[1]:
                raise BadItem(f"Evidence must be {EVIDENCE_CHARS[0]}-{EVIDENCE_CHARS[1]} characters: {line[:60]!r}.")
            if match_norm(line) not in text:
                raise BadItem(f"Not found in {library.title(doc)}: {line[:80]!r}. Copy it from the document viewer.")
        return cls(question, doc, category, evidence, answer)


def create_item(feedback: Feedback, draft: ItemDraft) -> ReportedItem:
    item = ReportedItem(feedback_id=feedback.id, question=draft.question, doc=draft.doc, category=draft.category,
                        evidence=list(draft.evidence), answer=draft.answer)
    db.session.add(item)
    db.session.commit()
    return item


def golden_lines() -> list[str]:
    return [json.dumps(item.golden(), ensure_ascii=False) + "\n"
            for item in ReportedItem.query.order_by(ReportedItem.id)]


def reported_path(settings) -> Path:
    """Where runs read the set: in the instance dir, beside the database it comes from."""
    return settings.instance_dir / "eval" / SET_FILES["reported"]


def write_reported(settings) -> Path:
    """The database's reported items as the set's JSONL file (atomically replaced)."""
    path = reported_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text("".join(golden_lines()), encoding="utf-8")
    os.replace(tmp, path)
    return path

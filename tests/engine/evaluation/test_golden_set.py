"""Consistency checks for the retrieval/answer golden set (data/eval/golden.jsonl).

Plain pytest, no project imports. The corpus directory comes from NISTCHAT_CORPUS_DIR, defaulting to
../shared/corpus/markdown relative to the repository root. Only the tests that need the corpus are
skipped when it is absent.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
GOLDEN_PATH = REPO_ROOT / "data" / "eval" / "golden.jsonl"
CORPUS_DIR = Path(
    os.environ.get(
        "NISTCHAT_CORPUS_DIR",
        str(REPO_ROOT.parent / "shared" / "corpus" / "markdown"),
    )
)

BIG_DOCS = (
    "NIST.AI.100-1",
    "NIST.AI.100-2e2023",
    "NIST.AI.100-5",
    "NIST.AI.600-1",
    "NIST.AI.800-4",
    "NIST.SP.800-218A",
)
CI_DOC = "NIST.AI.CI-Profile-Concept-Note"
ALL_DOCS = BIG_DOCS + (CI_DOC,)
CATEGORIES = {
    "factual",
    "reasoning",
    "edge",
    "ambiguity",
    "table",
    "acronym",
    "paraphrase",
    "negative",
}
REQUIRED_FIELDS = ("id", "doc", "category", "question", "evidence", "answer")
FORBIDDEN_MARKUP = ("|", "**", "#", "[^", "`")
MIN_QUESTIONS = 60
MIN_NEGATIVES = 8
EVIDENCE_MIN_LEN, EVIDENCE_MAX_LEN = 25, 200


def normalise(text: str) -> str:
    """Collapse every run of whitespace to one space and lowercase."""
    return re.sub(r"\s+", " ", text).strip().lower()


def load_jsonl(path: Path) -> list[dict]:
    """One record per non-blank line; shared with the other eval splits (tests/engine/evaluation/test_test_set.py)."""
    records = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:  # pragma: no cover - reported as failure
                pytest.fail(f"{path.name} line {lineno} is not valid JSON: {exc}")
    return records


def load_golden() -> list[dict]:
    return load_jsonl(GOLDEN_PATH)


def load_corpus() -> dict[str, str]:
    """Document stem -> markdown text; skips the calling test when the corpus is absent."""
    if not CORPUS_DIR.is_dir():
        pytest.skip(f"corpus directory not found: {CORPUS_DIR}")
    texts = {}
    for stem in ALL_DOCS:
        path = CORPUS_DIR / f"{stem}.md"
        assert path.is_file(), f"corpus file missing: {path}"
        texts[stem] = path.read_text(encoding="utf-8")
    return texts


@pytest.fixture(scope="module")
def golden() -> list[dict]:
    assert GOLDEN_PATH.is_file(), f"missing {GOLDEN_PATH}"
    return load_golden()


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    return load_corpus()


def answerable(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("category") != "negative"]


def docs_of(record: dict) -> list[str]:
    """The document stems a record cites: `doc` is one stem, or a list when evidence spans documents."""
    doc = record["doc"]
    return list(doc) if isinstance(doc, list) else [doc]


# --------------------------------------------------------------------------- evidence helpers
# Each returns the problems found (empty when all is well), so every split asserts the same rules.


def evidence_length_problems(records: list[dict]) -> list[str]:
    return [
        f"{r['id']}: evidence length {len(e)} outside {EVIDENCE_MIN_LEN}-{EVIDENCE_MAX_LEN}: {e!r}"
        for r in answerable(records)
        for e in r["evidence"]
        if not EVIDENCE_MIN_LEN <= len(e) <= EVIDENCE_MAX_LEN
    ]


def evidence_markup_problems(records: list[dict]) -> list[str]:
    problems = []
    for r in answerable(records):
        for e in r["evidence"]:
            found = [m for m in FORBIDDEN_MARKUP if m in e]
            if found:
                problems.append(f"{r['id']}: evidence contains markup {found}: {e!r}")
            if e.lstrip().startswith(">"):
                problems.append(f"{r['id']}: evidence starts with '>': {e!r}")
            if "\n" in e:
                problems.append(f"{r['id']}: evidence contains a line break: {e!r}")
    return problems


def evidence_missing_from_documents(records: list[dict], corpus: dict[str, str]) -> list[str]:
    """Evidence found (normalised) in none of the record's documents."""
    normalised = {stem: normalise(text) for stem, text in corpus.items()}
    return [
        f"{r['id']} ({r['doc']}): {e!r}"
        for r in answerable(records)
        for e in r["evidence"]
        if not any(normalise(e) in normalised[d] for d in docs_of(r))
    ]


def evidence_spanning_lines(records: list[dict], corpus: dict[str, str]) -> list[str]:
    """Evidence that no single line (paragraph, list item, table row) of its documents holds."""
    lines = {
        stem: [normalise(line) for line in text.splitlines() if line.strip()]
        for stem, text in corpus.items()
    }
    return [
        f"{r['id']} ({r['doc']}): {e!r}"
        for r in answerable(records)
        for e in r["evidence"]
        if not any(normalise(e) in line for d in docs_of(r) for line in lines[d])
    ]


# --------------------------------------------------------------------------- structure


def test_file_parses_and_is_large_enough(golden):
    assert len(golden) >= MIN_QUESTIONS, f"only {len(golden)} questions"
    assert all(isinstance(r, dict) for r in golden)


def test_required_fields_and_types(golden):
    for r in golden:
        missing = [f for f in REQUIRED_FIELDS if f not in r]
        assert not missing, f"{r.get('id')}: missing fields {missing}"
        assert isinstance(r["id"], str) and re.fullmatch(r"q\d{3,}", r["id"]), r["id"]
        assert r["doc"] is None or isinstance(r["doc"], str), r["id"]
        assert isinstance(r["question"], str) and r["question"].strip(), r["id"]
        assert isinstance(r["evidence"], list), r["id"]
        assert all(isinstance(e, str) for e in r["evidence"]), r["id"]
        assert isinstance(r["answer"], str), r["id"]


def test_ids_unique(golden):
    counts = Counter(r["id"] for r in golden)
    dupes = sorted(i for i, n in counts.items() if n > 1)
    assert not dupes, f"duplicate ids: {dupes}"


def test_questions_unique(golden):
    counts = Counter(normalise(r["question"]) for r in golden)
    dupes = sorted(q for q, n in counts.items() if n > 1)
    assert not dupes, f"duplicate questions: {dupes}"


def test_categories_allowed_and_all_present(golden):
    bad = sorted({r["id"] for r in golden if r["category"] not in CATEGORIES})
    assert not bad, f"unknown categories in {bad}"
    missing = CATEGORIES - {r["category"] for r in golden}
    assert not missing, f"categories with no question: {sorted(missing)}"


def test_doc_values_valid(golden):
    for r in golden:
        if r["category"] == "negative":
            assert r["doc"] is None, f"{r['id']}: negatives must have doc null"
        else:
            assert r["doc"] in ALL_DOCS, f"{r['id']}: unknown doc {r['doc']!r}"


def test_negatives(golden):
    negatives = [r for r in golden if r["category"] == "negative"]
    assert len(negatives) >= MIN_NEGATIVES, f"only {len(negatives)} negatives"
    for r in negatives:
        assert r["evidence"] == [], f"{r['id']}: negative with evidence"
        assert r["answer"] == "", f"{r['id']}: negative with an answer"


def test_all_documents_covered(golden):
    per_doc = Counter(r["doc"] for r in answerable(golden))
    for stem in BIG_DOCS:
        assert per_doc[stem] >= 5, f"{stem}: only {per_doc[stem]} questions"
    assert per_doc[CI_DOC] >= 3, f"{CI_DOC}: only {per_doc[CI_DOC]} questions"


def test_answerable_have_evidence_and_answer(golden):
    for r in answerable(golden):
        assert 1 <= len(r["evidence"]) <= 3, f"{r['id']}: needs 1-3 evidence strings"
        assert r["answer"].strip(), f"{r['id']}: empty answer"


def test_evidence_length(golden):
    problems = evidence_length_problems(golden)
    assert not problems, "\n".join(problems)


def test_evidence_has_no_markup(golden):
    problems = evidence_markup_problems(golden)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- against the corpus


def test_every_evidence_occurs_in_its_document(corpus, golden):
    misses = evidence_missing_from_documents(golden, corpus)
    assert not misses, "evidence not found in document:\n" + "\n".join(misses)


def test_every_evidence_lies_within_one_line(corpus, golden):
    """Evidence must not span a paragraph, list item, or table row boundary."""
    misses = evidence_spanning_lines(golden, corpus)
    assert not misses, "evidence not contained in a single line:\n" + "\n".join(misses)

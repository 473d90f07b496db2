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

REPO_ROOT = Path(__file__).resolve().parents[1]
GOLDEN_PATH = REPO_ROOT / "data" / "eval" / "golden.jsonl"
CORPUS_DIR = Path(
    os.environ.get(
        "NISTCHAT_CORPUS_DIR",
        str(Path(__file__).resolve().parents[2] / "shared" / "corpus" / "markdown"),
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


def load_golden() -> list[dict]:
    records = []
    with GOLDEN_PATH.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:  # pragma: no cover - reported as failure
                pytest.fail(f"golden.jsonl line {lineno} is not valid JSON: {exc}")
    return records


@pytest.fixture(scope="module")
def golden() -> list[dict]:
    assert GOLDEN_PATH.is_file(), f"missing {GOLDEN_PATH}"
    return load_golden()


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    if not CORPUS_DIR.is_dir():
        pytest.skip(f"corpus directory not found: {CORPUS_DIR}")
    texts = {}
    for stem in ALL_DOCS:
        path = CORPUS_DIR / f"{stem}.md"
        assert path.is_file(), f"corpus file missing: {path}"
        texts[stem] = path.read_text(encoding="utf-8")
    return texts


def answerable(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("category") != "negative"]


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
    for r in answerable(golden):
        for e in r["evidence"]:
            assert EVIDENCE_MIN_LEN <= len(e) <= EVIDENCE_MAX_LEN, (
                f"{r['id']}: evidence length {len(e)} outside "
                f"{EVIDENCE_MIN_LEN}-{EVIDENCE_MAX_LEN}: {e!r}"
            )


def test_evidence_has_no_markup(golden):
    for r in answerable(golden):
        for e in r["evidence"]:
            found = [m for m in FORBIDDEN_MARKUP if m in e]
            assert not found, f"{r['id']}: evidence contains markup {found}: {e!r}"
            assert not e.lstrip().startswith(">"), f"{r['id']}: evidence starts with '>': {e!r}"
            assert "\n" not in e, f"{r['id']}: evidence contains a line break: {e!r}"


# --------------------------------------------------------------------------- against the corpus


def test_every_evidence_occurs_in_its_document(corpus, golden):
    normalised = {stem: normalise(text) for stem, text in corpus.items()}
    misses = []
    for r in answerable(golden):
        doc_text = normalised[r["doc"]]
        for e in r["evidence"]:
            if normalise(e) not in doc_text:
                misses.append(f"{r['id']} ({r['doc']}): {e!r}")
    assert not misses, "evidence not found in document:\n" + "\n".join(misses)


def test_every_evidence_lies_within_one_line(corpus, golden):
    """Evidence must not span a paragraph, list item, or table row boundary."""
    lines = {
        stem: [normalise(line) for line in text.splitlines() if line.strip()]
        for stem, text in corpus.items()
    }
    misses = []
    for r in answerable(golden):
        for e in r["evidence"]:
            needle = normalise(e)
            if not any(needle in line for line in lines[r["doc"]]):
                misses.append(f"{r['id']} ({r['doc']}): {e!r}")
    assert not misses, "evidence not contained in a single line:\n" + "\n".join(misses)

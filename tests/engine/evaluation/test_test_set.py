"""Consistency checks for the two office-phrased splits: the held-out test split (data/eval/test.jsonl)
and the second dev split (data/eval/dev_office.jsonl).

The golden set and dev_office.jsonl are tuned on (dev); test.jsonl measures how the engine generalises
and must never be tuned on. Both office splits follow the golden-set rules (tests/engine/evaluation/test_golden_set.py,
whose helpers are reused here) plus their own: office-user categories, `doc` may name two documents,
`key_terms` that a correct answer must contain, and no question shared with another split. Question
texts and ids live only in the JSONL.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pytest

from tests.engine.evaluation.test_golden_set import (
    ALL_DOCS,
    REPO_ROOT,
    REQUIRED_FIELDS,
    answerable,
    docs_of,
    evidence_length_problems,
    evidence_markup_problems,
    evidence_missing_from_documents,
    evidence_spanning_lines,
    load_corpus,
    load_golden,
    load_jsonl,
    normalise,
)

EVAL_DIR = REPO_ROOT / "data" / "eval"
CATEGORIES = {
    "situation",
    "list",
    "yesno",
    "false_premise",
    "table",
    "two_passage",
    "number",
    "acronym",
    "paraphrase",
    "negative",
}
# The mix both splits were written to (see data/eval/README.md); yes/no counts false premises too.
MIN_PER_CATEGORY = {
    ("situation",): 15,
    ("list",): 10,
    ("yesno", "false_premise"): 8,
    ("false_premise",): 3,
    ("table",): 10,
    ("two_passage",): 8,
    ("number",): 5,
}
MIN_QUESTIONS = 85
KEY_TERMS_MIN, KEY_TERMS_MAX = 2, 5


@dataclass(frozen=True)
class Split:
    file: str
    id_prefix: str
    min_negatives: int
    min_per_doc: int


SPLITS = {
    "test": Split("test.jsonl", "t", 17, 4),
    "dev_office": Split("dev_office.jsonl", "o", 15, 3),
}


@pytest.fixture(scope="module", params=list(SPLITS))
def split(request) -> Split:
    return SPLITS[request.param]


@pytest.fixture(scope="module")
def testset(split) -> list[dict]:
    path = EVAL_DIR / split.file
    assert path.is_file(), f"missing {path}"
    return load_jsonl(path)


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    return load_corpus()


# --------------------------------------------------------------------------- structure


def test_file_parses_and_is_large_enough(testset):
    assert len(testset) >= MIN_QUESTIONS, f"only {len(testset)} questions"
    assert all(isinstance(r, dict) for r in testset)


def test_required_fields_and_types(split, testset):
    for r in testset:
        missing = [f for f in (*REQUIRED_FIELDS, "key_terms") if f not in r]
        assert not missing, f"{r.get('id')}: missing fields {missing}"
        assert isinstance(r["id"], str) and re.fullmatch(rf"{split.id_prefix}\d{{3,}}", r["id"]), r["id"]
        assert r["doc"] is None or isinstance(r["doc"], (str, list)), r["id"]
        assert isinstance(r["question"], str) and r["question"].strip(), r["id"]
        assert isinstance(r["evidence"], list), r["id"]
        assert all(isinstance(e, str) for e in r["evidence"]), r["id"]
        assert isinstance(r["answer"], str), r["id"]
        assert isinstance(r["key_terms"], list), r["id"]
        assert all(isinstance(k, str) and k.strip() for k in r["key_terms"]), r["id"]


def test_ids_unique(testset):
    counts = Counter(r["id"] for r in testset)
    dupes = sorted(i for i, n in counts.items() if n > 1)
    assert not dupes, f"duplicate ids: {dupes}"


def test_questions_unique(testset):
    counts = Counter(normalise(r["question"]) for r in testset)
    dupes = sorted(q for q, n in counts.items() if n > 1)
    assert not dupes, f"duplicate questions: {dupes}"


def test_no_question_shared_with_another_split(split, testset):
    """A question in two splits would leak dev tuning into the test score."""
    others = [("golden.jsonl", load_golden())] + [
        (s.file, load_jsonl(EVAL_DIR / s.file)) for s in SPLITS.values() if s != split]
    for name, records in others:
        seen = {normalise(r["question"]) for r in records}
        shared = sorted(r["id"] for r in testset if normalise(r["question"]) in seen)
        assert not shared, f"questions also in {name}: {shared}"


def test_categories_allowed_and_mix(testset):
    bad = sorted({r["id"] for r in testset if r["category"] not in CATEGORIES})
    assert not bad, f"unknown categories in {bad}"
    counts = Counter(r["category"] for r in testset)
    for group, minimum in MIN_PER_CATEGORY.items():
        n = sum(counts[c] for c in group)
        assert n >= minimum, f"{'+'.join(group)}: only {n} questions, want {minimum}"


def test_doc_values_valid(testset):
    for r in testset:
        if r["category"] == "negative":
            assert r["doc"] is None, f"{r['id']}: negatives must have doc null"
        elif isinstance(r["doc"], list):
            assert len(r["doc"]) == 2 and len(set(r["doc"])) == 2, f"{r['id']}: two distinct docs"
            assert set(r["doc"]) <= set(ALL_DOCS), f"{r['id']}: unknown doc in {r['doc']!r}"
        else:
            assert r["doc"] in ALL_DOCS, f"{r['id']}: unknown doc {r['doc']!r}"


def test_negatives(split, testset):
    negatives = [r for r in testset if r["category"] == "negative"]
    assert len(negatives) >= split.min_negatives, f"only {len(negatives)} negatives"
    for r in negatives:
        assert r["evidence"] == [], f"{r['id']}: negative with evidence"
        assert r["answer"] == "", f"{r['id']}: negative with an answer"
        assert r["key_terms"] == [], f"{r['id']}: negative with key terms"


def test_all_documents_covered(split, testset):
    minimum = split.min_per_doc
    per_doc = Counter(d for r in answerable(testset) for d in docs_of(r))
    thin = {stem: per_doc[stem] for stem in ALL_DOCS if per_doc[stem] < minimum}
    assert not thin, f"documents with fewer than {minimum} questions: {thin}"


def test_answerable_have_evidence_and_answer(testset):
    for r in answerable(testset):
        assert 1 <= len(r["evidence"]) <= 3, f"{r['id']}: needs 1-3 evidence strings"
        assert r["answer"].strip(), f"{r['id']}: empty answer"
        if r["category"] == "two_passage":
            assert len(r["evidence"]) == 2, f"{r['id']}: two-passage needs exactly 2 evidence strings"


def test_key_terms_present_and_grounded(testset):
    """Each key term must be stated by the expected answer or the evidence, so it is checkable."""
    for r in answerable(testset):
        terms = r["key_terms"]
        assert KEY_TERMS_MIN <= len(terms) <= KEY_TERMS_MAX, f"{r['id']}: {len(terms)} key terms"
        grounded = (r["answer"] + "\n" + "\n".join(r["evidence"])).lower()
        missing = [k for k in terms if k.lower() not in grounded]
        assert not missing, f"{r['id']}: key terms in neither answer nor evidence: {missing}"


def test_evidence_length(testset):
    problems = evidence_length_problems(testset)
    assert not problems, "\n".join(problems)


def test_evidence_has_no_markup(testset):
    problems = evidence_markup_problems(testset)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- against the corpus


def test_every_evidence_occurs_in_its_documents(corpus, testset):
    misses = evidence_missing_from_documents(testset, corpus)
    assert not misses, "evidence not found in document:\n" + "\n".join(misses)


def test_every_evidence_lies_within_one_line(corpus, testset):
    """Evidence must not span a paragraph, list item, or table row boundary."""
    misses = evidence_spanning_lines(testset, corpus)
    assert not misses, "evidence not contained in a single line:\n" + "\n".join(misses)


def test_two_document_questions_use_both(corpus, testset):
    """A question citing two documents must draw evidence from each of them."""
    normalised = {stem: normalise(text) for stem, text in corpus.items()}
    for r in answerable(testset):
        if isinstance(r["doc"], list):
            unused = [
                d for d in r["doc"] if not any(normalise(e) in normalised[d] for e in r["evidence"])
            ]
            assert not unused, f"{r['id']}: no evidence from {unused}"

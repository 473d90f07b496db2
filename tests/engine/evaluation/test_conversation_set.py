"""Consistency checks for the conversation sets (data/eval/conversations_dev.jsonl and
conversations_dev2.jsonl, and the held-out conversations_test.jsonl and conversations_test2.jsonl):
multi-turn conversations whose follow-ups lean on earlier turns.

Each turn is checked like a question of the office splits (tests/engine/evaluation/test_golden_set.py and
tests/engine/evaluation/test_test_set.py, whose helpers are reused): verbatim evidence within one line of its
documents, no markup, key terms the answer or evidence states. On top: every evidence string
survives ingestion's word repair (retrieval matches against the repaired passages), ids are unique
across all splits, no question is shared with another split or set, and each split has every kind
of turn, so a follow-up strategy chosen on dev is measured on test over the same kinds.
"""
from __future__ import annotations

import re
from collections import Counter

import pytest

from nistchat.engine.evaluation.conversations import KINDS, SET_FILES, resolve_sets
from nistchat.engine.evaluation.retrieval import match_norm
from tests.engine.evaluation.test_golden_set import (
    ALL_DOCS,
    CORPUS_DIR,
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
from tests.engine.evaluation.test_test_set import EVAL_DIR, KEY_TERMS_MAX

MIN_CONVERSATIONS, MIN_TURNS = 40, 100  # all splits together
MIN_PER_SPLIT = 18
FIRST_KINDS = {"first", "other_language"}  # a conversation may open in another language
TURN_FIELDS = ("question", "kind", "doc", "evidence", "key_terms", "answer")
STANDALONE_FILE = "conversations_dev2_standalone.jsonl"
STANDALONE_AS_TYPED = {"new_topic", "comparison"}  # a turn that already names its document and topic


@pytest.fixture(scope="module")
def splits() -> dict[str, list[dict]]:
    out = {}
    for name, file in SET_FILES.items():
        path = EVAL_DIR / file
        assert path.is_file(), f"missing {path}"
        out[name] = load_jsonl(path)
    return out


def turn_records(conversations: list[dict]) -> list[dict]:
    """Each turn as a golden-style record (id `c001.2`, category = kind) for the shared helpers."""
    return [{**t, "id": f"{c['id']}.{i}", "category": t["kind"]}
            for c in conversations for i, t in enumerate(c["turns"], 1)]


@pytest.fixture(scope="module")
def turns(splits) -> dict[str, list[dict]]:
    return {name: turn_records(convs) for name, convs in splits.items()}


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    return load_corpus()


@pytest.fixture(scope="module")
def repaired() -> dict[str, str]:
    """Each document as the index holds it (word repair applied), normalised as retrieval matches."""
    if not CORPUS_DIR.is_dir():
        pytest.skip(f"corpus directory not found: {CORPUS_DIR}")
    from nistchat.engine.corpus.documents import read_document

    return {stem: match_norm("\n".join(b.text for b in read_document(CORPUS_DIR / f"{stem}.md").blocks))
            for stem in ALL_DOCS}


# --------------------------------------------------------------------------- structure


def test_sizes(splits):
    convs = [c for s in splits.values() for c in s]
    assert len(convs) >= MIN_CONVERSATIONS, f"only {len(convs)} conversations"
    assert sum(len(c["turns"]) for c in convs) >= MIN_TURNS
    for name, s in splits.items():
        assert len(s) >= MIN_PER_SPLIT, f"{name}: only {len(s)} conversations"
        assert all(2 <= len(c["turns"]) <= 5 for c in s), f"{name}: conversations have 2-5 turns"


def test_all_reads_the_four_splits_side_by_side():
    assert list(resolve_sets("all", [EVAL_DIR])) == ["dev", "dev2", "test", "test2"]
    assert list(resolve_sets("both", [EVAL_DIR])) == ["dev", "test"]


def test_fields_and_types(turns):
    for records in turns.values():
        for r in records:
            missing = [f for f in TURN_FIELDS if f not in r]
            assert not missing, f"{r['id']}: missing {missing}"
            assert isinstance(r["question"], str) and r["question"].strip(), r["id"]
            assert r["kind"] in KINDS, f"{r['id']}: unknown kind {r['kind']!r}"
            assert isinstance(r["answer"], str) and r["answer"].strip(), r["id"]
            assert isinstance(r["evidence"], list) and 1 <= len(r["evidence"]) <= 3, f"{r['id']}: 1-3 evidence"
            assert isinstance(r["key_terms"], list) and 1 <= len(r["key_terms"]) <= KEY_TERMS_MAX, r["id"]
            docs = docs_of(r)
            assert 1 <= len(docs) <= 2 and len(set(docs)) == len(docs), f"{r['id']}: one or two distinct docs"
            assert set(docs) <= set(ALL_DOCS), f"{r['id']}: unknown doc {r['doc']!r}"


def test_key_terms_in_the_typed_language_pair_with_the_english_ones(turns):
    """`key_terms_typed` only on other-language turns, one entry per key term, each of its forms
    found in the turn's expected answer or its question (what the answer in that language holds)."""
    for records in turns.values():
        for r in records:
            typed = r.get("key_terms_typed")
            if typed is None:
                continue
            assert r["kind"] == "other_language" and len(typed) == len(r["key_terms"]), r["id"]
            said = f"{r['question']} {r['answer']}".lower()
            assert all(any(form in said for form in entry.split("|")) for entry in typed), r["id"]


def test_ids_unique_across_splits(splits):
    ids = [c["id"] for s in splits.values() for c in s]
    assert all(re.fullmatch(r"c\d{3}", i) for i in ids), ids
    dupes = sorted(i for i, n in Counter(ids).items() if n > 1)
    assert not dupes, f"duplicate ids: {dupes}"


def test_turn_positions_and_kinds(splits):
    for s in splits.values():
        for c in s:
            first, *rest = c["turns"]
            assert first["kind"] in FIRST_KINDS, f"{c['id']}: opens with a {first['kind']} turn"
            assert all(t["kind"] != "first" for t in rest), f"{c['id']}: a 'first' turn after the first"


def test_each_split_has_every_kind(turns):
    for name, records in turns.items():
        counts = Counter(r["kind"] for r in records)
        absent = [k for k in KINDS if not counts[k]]
        assert not absent, f"{name}: no turns of kind {absent}"


def test_questions_unique_and_not_in_other_sets(turns):
    """A question in two splits or sets would leak dev tuning into a held-out score."""
    ours = Counter(normalise(r["question"]) for records in turns.values() for r in records)
    dupes = sorted(q for q, n in ours.items() if n > 1)
    assert not dupes, f"questions repeated across the conversation sets: {dupes}"
    others = {"golden.jsonl": load_golden()} | {f: load_jsonl(EVAL_DIR / f) for f in ("test.jsonl", "dev_office.jsonl")}
    for f in ("smalltalk_dev.jsonl", "smalltalk_test.jsonl"):
        others[f] = [{"question": r["text"]} for r in load_jsonl(EVAL_DIR / f)]
    for file, records in others.items():
        seen = {normalise(r["question"]) for r in records}
        shared = sorted(q for q in ours if q in seen)
        assert not shared, f"questions also in {file}: {shared}"


def test_other_language_turns_carry_their_english(turns):
    """Each turn in another language has `english`, its question translated (evaluation/languages.py
    measures the two against each other); no other turn has one, and the detector reads the
    question as typed in another language and the translation as English."""
    from nistchat.engine.retrieval import typed_language

    for records in turns.values():
        for r in records:
            if r["kind"] != "other_language":
                assert "english" not in r, f"{r['id']}: `english` on a {r['kind']} turn"
                continue
            assert isinstance(r.get("english"), str) and r["english"].strip(), f"{r['id']}: no `english`"
            assert normalise(r["english"]) != normalise(r["question"]), r["id"]
            assert typed_language(r["question"]), f"{r['id']}: not read as another language"
            assert not typed_language(r["english"]), f"{r['id']}: `english` not read as English"


def test_key_terms_grounded(turns):
    for records in turns.values():
        for r in records:
            grounded = (r["answer"] + "\n" + "\n".join(r["evidence"])).lower()
            missing = [k for k in r["key_terms"] if k.lower() not in grounded]
            assert not missing, f"{r['id']}: key terms in neither answer nor evidence: {missing}"


def test_evidence_length_and_markup(turns):
    for records in turns.values():
        problems = evidence_length_problems(records) + evidence_markup_problems(records)
        assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- against the corpus


def test_evidence_in_documents_within_one_line(corpus, turns):
    for records in turns.values():
        misses = evidence_missing_from_documents(records, corpus) + evidence_spanning_lines(records, corpus)
        assert not misses, "evidence not found within one line of its document:\n" + "\n".join(misses)


def test_evidence_survives_word_repair(repaired, turns):
    """Retrieval matches evidence against the repaired passages: a quoted glued word would never hit."""
    for records in turns.values():
        misses = [f"{r['id']}: {e!r}" for r in records for e in r["evidence"]
                  if not any(match_norm(e) in repaired[d] for d in docs_of(r))]
        assert not misses, "evidence missing from the repaired documents:\n" + "\n".join(misses)


def test_comparison_turns_use_both_documents(corpus, turns):
    normalised = {stem: normalise(text) for stem, text in corpus.items()}
    for records in turns.values():
        for r in records:
            if isinstance(r["doc"], list):
                unused = [d for d in r["doc"] if not any(normalise(e) in normalised[d] for e in r["evidence"])]
                assert not unused, f"{r['id']}: no evidence from {unused}"


# --------------------------------------------------------------------------- dev2's follow-ups written standalone


def test_standalone_follow_ups_keep_their_turns_expectations(splits):
    """conversations_dev2_standalone.jsonl asks dev2's follow-ups as first turns, written out in
    full (data/eval/README.md): each must keep the expectations of the dev2 turn it stands for,
    or the two runs would score different things; and it may stand only for dev2's turns, which
    were read to write it (a held-out turn written out would be a held-out turn read)."""
    dev2 = {f"{c['id']}.{i}": t for c in splits["dev2"] for i, t in enumerate(c["turns"], 1)}
    standalone = load_jsonl(EVAL_DIR / STANDALONE_FILE)
    assert len(standalone) >= 40
    for c in standalone:
        assert c["id"] in dev2 and not c["id"].endswith(".1"), f"{c['id']}: not a dev2 follow-up"
        (turn,) = c["turns"]
        original = dev2[c["id"]]
        assert {f: turn[f] for f in TURN_FIELDS[1:]} == {f: original[f] for f in TURN_FIELDS[1:]}, c["id"]
        assert turn.get("key_terms_typed") == original.get("key_terms_typed"), c["id"]
        assert turn["question"] != original["question"] or original["kind"] in STANDALONE_AS_TYPED, \
            f"{c['id']}: a follow-up copied, not written out"

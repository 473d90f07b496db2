"""Consistency checks for the translated question sets (data/eval/languages_dev.jsonl and the held-out
languages_test.jsonl): questions of the office splits typed in Spanish, German or French.

Each line is a one-turn conversation whose turn copies its source question's doc, evidence, key
terms and answer, with the source question verbatim as `english`; so the set measures the
translation alone against the same question in English (`nistchat eval conversations --languages`).
Checked here: the selection rule the README states (every other answerable question, languages in
rotation), the copied fields equal to the source's, dev drawn from the dev split and test from the
held-out one, and the language detector reading each dev question as the language it is in.
"""
from __future__ import annotations

from collections import Counter

import pytest

from nistchat.engine.evaluation.conversations import LANGUAGE_FILES, load_conversations
from tests.engine.evaluation.test_golden_set import load_jsonl, normalise
from tests.engine.evaluation.test_test_set import EVAL_DIR

SOURCES = {"dev": ("dev_office.jsonl", "ld"), "test": ("test.jsonl", "lt")}
ROTATION = ("Spanish", "German", "French")
COPIED = ("doc", "evidence", "key_terms", "answer")


@pytest.fixture(scope="module")
def sets() -> dict[str, list[dict]]:
    out = {}
    for name, file in LANGUAGE_FILES.items():
        path = EVAL_DIR / file
        assert path.is_file(), f"missing {path}"
        out[name] = load_jsonl(path)
    return out


def answerable(file: str) -> list[dict]:
    return [r for r in load_jsonl(EVAL_DIR / file) if r["category"] != "negative"]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_selection_rule_and_rotation(sets, name):
    """Every other answerable question of the source split, in its order, languages in rotation: the
    rule fixed before anything was measured, so no question was picked for how it fares."""
    file, prefix = SOURCES[name]
    chosen = answerable(file)[::2]
    rows = sets[name]
    assert [r["source"] for r in rows] == [q["id"] for q in chosen]
    assert [r["id"] for r in rows] == [f"{prefix}{i:03d}" for i in range(1, len(rows) + 1)]
    assert [r["language"] for r in rows] == [ROTATION[i % 3] for i in range(len(rows))]
    assert min(Counter(r["language"] for r in rows).values()) >= 10


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_one_turn_copying_its_source(sets, name):
    sources = {q["id"]: q for q in answerable(SOURCES[name][0])}
    for row in sets[name]:
        (turn,) = row["turns"]
        source = sources[row["source"]]
        assert turn["kind"] == "other_language", row["id"]
        assert turn["english"] == source["question"], row["id"]
        assert {f: turn[f] for f in COPIED} == {f: source[f] for f in COPIED}, row["id"]
        assert turn["question"].strip() and normalise(turn["question"]) != normalise(source["question"]), row["id"]
        assert "\n" not in turn["question"], row["id"]


def test_questions_unique_across_both_sets(sets):
    questions = Counter(normalise(r["turns"][0]["question"]) for rows in sets.values() for r in rows)
    assert not [q for q, n in questions.items() if n > 1]


def test_the_loader_reads_them(sets):
    for file in LANGUAGE_FILES.values():
        convs = load_conversations(EVAL_DIR / file)
        assert convs and all(len(c.turns) == 1 and c.turns[0].english for c in convs)


def test_the_detector_reads_each_dev_question_in_its_language(sets):
    """What is searched as a translation is what the detector calls another language: a question it
    took for English would be searched as typed (dev only; test is not looked at this way)."""
    from nistchat.engine.retrieval import typed_language

    read = [(r["id"], r["language"], typed_language(r["turns"][0]["question"])) for r in sets["dev"]]
    wrong = [x for x in read if x[1] != x[2]]
    assert len(wrong) <= len(read) // 20, f"read as another language than written: {wrong}"
    assert not any(typed_language(r["turns"][0]["english"]) for r in sets["dev"])


def test_languages_runs_bring_each_splits_translated_questions():
    from nistchat.engine.evaluation.conversations import resolve_sets

    assert list(resolve_sets("dev", [EVAL_DIR])) == ["dev"]
    both = resolve_sets("both", [EVAL_DIR], languages=True)
    assert list(both) == ["dev", "dev questions", "test", "test questions"]
    assert both["test questions"].name == "languages_test.jsonl"

"""Quality guards over the whole golden set: regressions in retrieval or refusals fail here.

The retrieval guard is fast and runs by default. The answer guards run real answers on the
1.5B reader (the `make run` default) and are marked slow: `make test-slow`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nistchat.engine.evaluation.retrieval import evaluate, load_golden
from nistchat.engine.runtime import Runtime
from tests.conftest import MODELS_DIR, REPO, make_settings

EVAL_DIR = REPO / "data" / "eval"
GOLDEN = EVAL_DIR / "golden.jsonl"


def test_hybrid_retrieval_finds_the_evidence_and_beats_each_retriever(runtime):
    report = evaluate(runtime.retriever, load_golden(GOLDEN), k=6, warmup=0)
    modes = report["modes"]
    # a floor a little under the measured score (docs/decisions.md, "Quality guards in the test suite")
    assert modes["hybrid"]["hit"] >= 0.90, modes["hybrid"]["misses"]
    assert modes["hybrid"]["hit"] >= max(modes["dense"]["hit"], modes["bm25"]["hit"])


def test_office_phrased_dev_split_keeps_its_floor(runtime):
    """dev2 on MiniLM's lists (the suite runs without the second embedder). MiniLM reads office
    phrasing poorly, so here fusion need only beat dense, not BM25 (docs/decisions.md, "Quality
    guards in the test suite")."""
    modes = evaluate(runtime.retriever, load_golden(EVAL_DIR / "dev_office.jsonl"), k=6, warmup=0)["modes"]
    assert modes["hybrid"]["hit"] >= 0.70, modes["hybrid"]["misses"]
    assert modes["hybrid"]["hit"] > modes["dense"]["hit"]


@pytest.fixture(scope="module")
def runtime_1_5b(index):
    if not (MODELS_DIR / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").exists():
        pytest.skip("1.5B reader not installed (make test-slow installs it)")
    return Runtime(make_settings(gguf="qwen2.5-coder-1.5b"))


def _final(runtime, question):
    return [e for e in runtime.answer(question) if e.type == "final"][-1].to_dict()


@pytest.mark.slow
def test_negatives_are_refused_or_flagged_on_the_1_5b_reader(runtime_1_5b):
    negatives = [g for g in map(json.loads, GOLDEN.read_text().splitlines()) if g["category"] == "negative"]
    finals = {g["id"]: _final(runtime_1_5b, g["question"]) for g in negatives}
    caught = [qid for qid, d in finals.items() if d["refused"] or d["flagged"]]
    assert len(caught) >= 0.9 * len(negatives), caught


@pytest.mark.slow
def test_answerable_questions_are_answered_on_the_1_5b_reader(runtime_1_5b):
    answerable = [g for g in map(json.loads, GOLDEN.read_text().splitlines()) if g["evidence"]][::4]
    refused = [g["id"] for g in answerable if _final(runtime_1_5b, g["question"])["refused"]]
    # the target is 10 %; the guard sits just above the measured rate, so it catches a regression
    # (docs/decisions.md, "Quality guards in the test suite")
    assert len(refused) <= 0.2 * len(answerable), refused

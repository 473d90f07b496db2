"""Audit mode (engine/verification/audit.py) on the real index: per-sentence verdicts, anchors that count
against a sentence, the trust score and its label, and the command line."""
from __future__ import annotations

import json

from click.testing import CliRunner

from nistchat.cli import main
from nistchat.engine.verification.audit import AuditThresholds, audit
from tests.conftest import REPO

QUESTION = "What are the functions of the AI RMF Core?"
FAITHFUL = "The AI RMF Core is composed of four functions: GOVERN, MAP, MEASURE, and MANAGE."


def test_a_faithful_sentence_is_supported_with_its_passage_and_supporting_sentence(runtime):
    result = audit(runtime, QUESTION, FAITHFUL, judge=False)
    [s] = result.sentences
    assert s.verdict == "supported" and s.passage["doc"] == "NIST.AI.100-1"
    assert any("four functions" in line for line in s.support)
    assert result.label == "Supported" and result.trust_score >= AuditThresholds().supported
    assert "verifier" not in result.models and "not used" in result.method


def test_a_number_no_passage_states_counts_against_its_sentence(runtime):
    result = audit(runtime, QUESTION, FAITHFUL + " The Core was first published in 1997 as version 7.4.", judge=False)
    good, bad = result.sentences
    assert good.verdict == "supported" and bad.verdict != "supported"
    assert "1997" in bad.missing and "1997" in bad.nowhere and bad.score < good.score
    assert result.label != "Supported"


def test_a_changed_function_scores_lower_than_the_faithful_sentence(runtime):
    faithful = audit(runtime, "What is the MAP function for?",
                     "The MAP function establishes the context to frame risks related to an AI system.", judge=False)
    changed = audit(runtime, "What is the MAP function for?",
                    "The MEASURE function establishes the context to frame risks related to an AI system.", judge=False)
    assert faithful.trust_score > changed.trust_score


def test_the_verifier_is_asked_once_per_sentence_on_the_best_passage(runtime):
    result = audit(runtime, QUESTION, FAITHFUL)
    assert result.sentences[0].judge is not None and "verifier" in result.models


def test_audit_command_prints_json_with_the_contract_keys(runtime):
    out = CliRunner().invoke(main, ["audit", "--question", QUESTION, "--answer", FAITHFUL, "--json", "--no-judge"],
                             obj=runtime)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert {"trust_score", "label", "sentences"} <= set(data)
    assert {"text", "verdict", "score", "passage"} <= set(data["sentences"][0])
    assert CliRunner().invoke(main, ["audit", "--question", QUESTION], obj=runtime).exit_code == 2


def test_the_measured_answer_pairs_are_well_formed():
    """data/eval/audit_pairs.jsonl (docs/evaluation.md, Audit): at least 30 pairs, each a faithful answer and the
    same with one fact changed, of each kind of change."""
    from pathlib import Path

    path = REPO / "data" / "eval" / "audit_pairs.jsonl"
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(pairs) >= 30 and len({p["id"] for p in pairs}) == len(pairs)
    assert {p["change"] for p in pairs} == {"number", "function", "document"}
    for p in pairs:
        assert p["question"] and p["faithful"] != p["changed"], p["id"]

"""Risk classifier: the pattern table decides which answers get verified and which get a list note."""
import pytest

from nistchat.config import load_settings
from nistchat.engine.retrieval.risk import DEFAULT_PATTERNS, RiskTable, classify


@pytest.mark.parametrize("question, kind", [
    ("Which MEASURE subcategory describes tracking of emergent risks?", "selection"),
    ("Which of these practices answers the need for provenance?", "selection"),
    ("What are the four functions of the AI RMF core?", "enumeration"),
    ("How many subcategories does GOVERN 1 have?", "enumeration"),
    ("How does NIST define a dual-use foundation model?", "definition"),
    ("What is red-teaming defined as in the profile?", "definition"),
    ("What does TEVV stand for?", "definition"),
    ("When a user asks the chatbot for medical advice, what should it do?", "scenario"),
])
def test_high_risk_kinds(question, kind):
    risk = classify(question)
    assert risk.level == "HIGH"
    assert kind in risk.kinds


@pytest.mark.parametrize("question", [
    "What are the six categories of monitoring?",
    "List the tasks under PW.3.",
    "list all suggested actions for MAP 5.1",
    "Name the seven characteristics of trustworthy AI.",
    "Which four themes did the working group focus on?",
])
def test_list_questions_are_high_and_flagged(question):
    risk = classify(question)
    assert risk.level == "HIGH" and risk.is_list and "list" in risk.kinds


@pytest.mark.parametrize("question", [
    "Why does the plan warn about developing standards too early?",
    "Is red-teaming done before or after release?",
    "Tell me about data poisoning.",
    "What is the purpose of the critical infrastructure profile?",
    "",
])
def test_low_risk(question):
    risk = classify(question)
    assert risk.level == "LOW" and not risk.is_list and risk.kinds == []


def test_whitespace_and_case_do_not_matter():
    assert classify("  WHAT   are the\nTHREE categories of bias?").is_list


def test_table_is_replaceable_and_extendable_from_settings(tmp_path):
    replaced = load_settings(instance_dir=tmp_path, environ={},
                             overrides={"risk.patterns": [{"kind": "custom", "pattern": r"\bfoo\b"}]})
    assert classify("what is foo?", replaced).kinds == ["custom"]
    assert classify("What are the six categories?", replaced).level == "LOW"  # defaults gone

    extended = load_settings(instance_dir=tmp_path, environ={}, overrides={"risk.patterns_extra": [
        {"kind": "list", "pattern": r"\bsummari[sz]e every\b", "list": True}]})
    risk = classify("Summarise every monitoring category", extended)
    assert risk.is_list and risk.level == "HIGH"
    assert classify("What are the six categories?", extended).is_list  # defaults kept


def test_default_table_rows_compile():
    table = RiskTable.from_rows(DEFAULT_PATTERNS)
    assert len(table.patterns) == len(DEFAULT_PATTERNS)

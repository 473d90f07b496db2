"""Sentence splitting, per-sentence verdicts and the retry decision (verifier stubbed by a rule,
so these run without a model; the real judge is exercised in test_pipeline.py)."""
import pytest

from nistchat.engine.types import Passage, Verdict
from nistchat.engine.verify import (VerifyBudget, candidate_passages, citations, claim_text, is_checkable,
                                    says_dont_know, should_retry, split_sentences, support_score,
                                    verify_sentences)


def P(text, section="Sec"):
    return Passage(rank=1, id=text[:8], doc="NIST.AI.100-1", title="AI RMF", section=section, kind="prose",
                   page=1, text=text, score=1.0)


def test_abbreviations_do_not_end_sentences():
    text = "Use safeguards, e.g. red-teaming, i.e. adversarial testing [1]. The U.S. government agrees. Done."
    assert split_sentences(text) == [
        "Use safeguards, e.g. red-teaming, i.e. adversarial testing [1].",
        "The U.S. government agrees.", "Done."]


def test_identifier_labels_stay_with_their_text():
    text = "GOVERN 1.2. The characteristics of trustworthy AI are integrated [2]. See also MAP 5.1 now."
    assert split_sentences(text) == ["GOVERN 1.2. The characteristics of trustworthy AI are integrated [2].",
                                     "See also MAP 5.1 now."]


def test_decimals_and_section_numbers_are_not_boundaries():
    assert split_sentences("AI RMF 1.0 was released in 2023. Version 1.1 is planned.") == [
        "AI RMF 1.0 was released in 2023.", "Version 1.1 is planned."]


def test_list_items_are_sentences_and_keep_their_markers():
    text = "The categories are:\n1. Functionality monitoring [1].\n2. Security monitoring.\n- Compliance. Also [2]."
    assert split_sentences(text) == ["The categories are:", "1. Functionality monitoring [1].",
                                     "2. Security monitoring.", "- Compliance. Also [2]."]


def test_citation_after_the_period_belongs_to_the_sentence_before():
    assert split_sentences("It ends here. [3] Next one! Really?") == ["It ends here. [3]", "Next one!", "Really?"]


def test_citation_parsing_and_claim_text():
    assert citations("A [1] and B [2, 4] and C [5-6].") == [1, 2, 4, 5, 6]
    assert claim_text("1. Functionality monitoring [3].") == "Functionality monitoring."


def test_lead_ins_and_refusals_are_not_checked():
    assert not is_checkable("The six categories are:")
    assert not is_checkable("I don't know.")
    assert is_checkable("Security monitoring asks whether the system is secure [2].")


@pytest.mark.parametrize("text, expected", [
    ("I don't know.", True),
    ("The context does not contain information about HIPAA.", True),
    ("", True),
    ("GOVERN 1.2 is about policies [1]. It does not mention fines.", False),
])
def test_says_dont_know(text, expected):
    assert says_dont_know(text) is expected


def test_candidates_prefer_valid_citations_then_word_overlap():
    passages = [P("Bias in data sets."), P("Security monitoring detects attacks."), P("Red teaming exercises.")]
    assert candidate_passages("Monitoring detects attacks [3].", passages, 2) == [3, 2]
    assert candidate_passages("Monitoring detects attacks [9].", passages, 2) == [2, 1]


def test_verdicts_record_the_supporting_passage_and_respect_the_budget():
    passages = [P("Bias in data sets is systemic."), P("Security monitoring detects attacks on the system.")]
    calls = []

    def check(document, claim):  # rule stand-in for the judge: supported when all claim words appear
        calls.append(claim)
        return all(w in document.lower() for w in claim.lower().rstrip(".").split())

    verdicts = list(verify_sentences(["Security monitoring detects attacks [1].", "Bias is systemic.",
                                      "The moon is made of cheese."], passages, check,
                                     VerifyBudget(per_sentence=2, max_checks=4)))
    assert [(v.supported, v.passage) for v in verdicts] == [(True, 2), (True, 1), (False, None)]
    assert len(calls) == 4  # 2 for the first (cited [1] fails, then [2]), 1 for the second, 1 left for the third


def test_sentences_beyond_the_budget_are_unsupported_not_assumed_true():
    verdicts = list(verify_sentences(["One claim here.", "Two claims here."], [P("x")], lambda d, c: True,
                                     VerifyBudget(per_sentence=1, max_checks=1)))
    assert [v.supported for v in verdicts] == [True, False]


def test_retry_when_more_fail_than_pass():
    v = lambda ok: Verdict("s", ok, 1 if ok else None)  # noqa: E731
    assert should_retry([v(False), v(False), v(True)])
    assert not should_retry([v(False), v(True)])
    assert not should_retry([])
    assert support_score([v(True), v(False)]) == 0.5


def test_a_bare_answer_is_checked_together_with_its_question():
    seen = []
    verdicts = list(verify_sentences(["High."], [P("High priority tasks are critical.")],
                                     lambda d, c: seen.append(c) or False, question="What does High mean?"))
    assert seen == ["Question: What does High mean? Answer: High."]
    assert [(v.text, v.supported) for v in verdicts] == [("High.", False)]
    # without the question (citation-only checks) nothing is checked
    assert list(verify_sentences(["High."], [P("x")], lambda d, c: True)) == []

"""Per-sentence verdicts and the retry decision (verifier stubbed by a rule,
so these run without a model; the real judge is exercised in test_pipeline.py)."""
import pytest

from nistchat.engine.text import split_sentences
from nistchat.engine.types import Passage, Verdict
from nistchat.config import VerifySettings
from nistchat.engine.retrieval.followup import answer_items
from nistchat.engine.verification.verify import (ASKED_BACK, BARE_POLARITY, COUNTED_NOT_LISTED, YES_AGAINST_NO, asked_back,
                                    bare_polarity, candidate_passages, citations, claim_text,
                                    count_mismatch, counted_not_listed, is_checkable, says_dont_know, should_retry, support_score,
                                    verify_sentences, yes_against_no)


def P(text, section="Sec"):
    return Passage(rank=1, id=text[:8], doc="NIST.AI.100-1", title="AI RMF", section=section, kind="prose",
                   page=1, text=text, score=1.0)


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
    # asking for more context instead of answering, and declining in the other languages answered in
    ("Could you please provide more context about which sprocket you mean?", True),
    ("Por favor, proporciona más contexto para poder responder.", True),
    ("Los pasajes no mencionan los engranajes.", True),
    ("Die Textstellen erwähnen keine Zahnräder.", True),
    ("Je ne sais pas. Les engrenages sont absents.", True),
    ("No se debe usar un engranaje sin revisión [1].", False),  # "no se" (must not) is no "no sé"
    ("Das Profil nennt drei Zahnräder [2].", False),
    # asking the reader's own audience for more is a decline; saying others should give more is not
    ("Sprocket makers should provide more information to users [1].", False),
    ("Los fabricantes deben proporcionar más información sobre los engranajes [1].", False),
    ("Les fabricants doivent fournir plus d'informations sur les engrenages [1].", False),
    ("Veuillez fournir plus de contexte.", True),
    ("[1].", True),  # nothing but a mark
    ("", True),
    ("MANAGE [4].", False),  # a word in capitals is a word
    ("Sí [1].", False),
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
                                     VerifySettings(per_sentence=2, max_checks=4)))
    assert [(v.supported, v.passage) for v in verdicts] == [(True, 2), (True, 1), (False, None)]
    assert len(calls) == 4  # 2 for the first (cited [1] fails, then [2]), 1 for the second, 1 left for the third


def test_sentences_beyond_the_budget_are_unsupported_not_assumed_true():
    verdicts = list(verify_sentences(["One claim here.", "Two claims here."], [P("x")], lambda d, c: True,
                                     VerifySettings(per_sentence=1, max_checks=1)))
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


# -- anchor grounding: numbers, identifiers and acronyms must be stated somewhere
def _p(text, section="5.1 Govern", doc="NIST.AI.100-1"):
    return Passage(1, "x", doc, "AI RMF", section, "prose", None, text, 1.0)


def test_anchors_pick_numbers_identifiers_acronyms():
    from nistchat.engine.verification.verify import anchors
    assert anchors("Under GDPR Article 22, people may object; see LLM10 and M-24-10 and PW.1.1.") == [
        "GDPR", "22", "LLM10", "M-24-10", "PW.1.1"]
    assert anchors("The framework has trustworthy characteristics.") == []


def test_ungrounded_claim_skips_the_judge_and_is_unsupported():
    calls = []

    def judge(doc, claim):
        calls.append(claim)
        return True  # a lenient judge: would pass anything

    passages = [_p("The AI RMF Core has four functions: GOVERN, MAP, MEASURE and MANAGE.")]
    verdicts = list(verify_sentences(["The maximum fine is 35 million euros under the EU AI Act [1]."],
                                     passages, judge))
    assert verdicts[0].supported is False and "35" in verdicts[0].reason and calls == []
    verdicts = list(verify_sentences(["The Core has 4 functions [1]."], passages, judge))
    assert verdicts[0].supported is True and len(calls) == 1  # "4" matches "four"


def test_ungrounded_verdicts_flag_only_unstated_facts():
    from nistchat.engine.verification.verify import ungrounded_verdicts
    passages = [_p("MAP 5.1 concerns likelihood and magnitude of each identified impact.")]
    sentences = ["MAP 5.1 concerns the likelihood of impacts.", "OWASP lists LLM10 as unbounded consumption.",
                 "Under HIPAA the data must be removed."]
    flagged = ungrounded_verdicts(sentences, passages, question="What does HIPAA require?")
    assert [v.text for v in flagged] == ["OWASP lists LLM10 as unbounded consumption."]
    assert flagged[0].reason == "not in any passage: OWASP, LLM10"


def test_an_answer_that_only_echoes_the_question_is_a_non_answer():
    from nistchat.engine.verification.verify import restates_question
    q = "Which section of ISO/IEC 27001 holds the requirement to keep a statement of applicability?"
    assert restates_question("ISO/IEC 27001 holds the requirement to keep a statement of applicability.", q)
    assert restates_question("ISO/IEC 27001 holds the requirement to keep a statement of applicability in "
                             "section R: statement of applicability.", q)
    assert not restates_question("Clause 6.1.3 of ISO/IEC 27001 requires a statement of applicability.", q)
    q2 = "What are the four functions of the AI RMF Core?"
    assert not restates_question("Govern, Map, Measure, Manage.", q2)
    assert not restates_question("The four functions are GOVERN, MAP, MEASURE and MANAGE [1].", q2)
    assert not restates_question("Yes.", "Does the AI RMF apply to all sectors?")  # too short to judge
    q3 = "Why isn't lab testing before launch enough to know how an AI product will behave with real customers?"
    assert restates_question("Lab testing before launch is not enough to know how an AI product will behave "
                             "with real customers because [1].", q3)  # filler and a citation are no answer
    q4 = "Which attacker objective appears in addition to availability, integrity and privacy?"
    assert not restates_question("The objective that appears in addition to availability, integrity, and "
                                 "privacy is abuse.", q4)  # one new word, and it is the answer
    yes_no = "Would training a model with differential privacy stop an attacker from stealing the model?"
    assert not restates_question("No, training a model with differential privacy does not stop an attacker "
                                 "from stealing the model.", yes_no)
    fronted = "Because multimodal models see the same data in several modalities, are they more robust to attacks?"
    assert not restates_question("Multimodal models see the same data in several modalities, so they are more "
                                 "robust to attacks.", fronted)


def test_judge_budget_goes_to_passages_that_state_the_claims_numbers():
    seen = []

    def judge(doc, claim):
        seen.append(doc)
        return "250" in doc

    passages = [_p("Workshops were held in 2025 with stakeholders."), _p("Attendees came from academia."),
                _p("The workshops had three sessions."), _p("In all, totaling over 250 participants.")]
    verdicts = list(verify_sentences(["Over 250 people attended the workshops."], passages, judge,
                                     VerifySettings(per_sentence=2)))
    assert verdicts[0].supported and verdicts[0].passage == 4 and len(seen) == 1
    verdicts = list(verify_sentences(["Over 300 people attended the workshops."], passages, judge))
    assert not verdicts[0].supported and verdicts[0].reason == "not in any passage: 300" and len(seen) == 1


def test_a_quote_is_supported_without_a_judge_call_but_a_negation_flip_is_not():
    from nistchat.engine.verification.verify import quoted_by

    calls = []

    def judge(doc, claim):
        calls.append(claim)
        return False  # a small judge that says No to everything

    passages = [_p("Privacy matters. By definition, DP provides mitigation against data reconstruction and "
                   "membership inference attacks. DP does not provide guarantees against model extraction "
                   "attacks, as this method is designed to protect the training data, not the model.")]
    quote = "DP provides mitigation against data reconstruction and membership inference attacks [1]."
    flipped = "DP provides guarantees against model extraction attacks."
    joined = ("DP provides mitigation against data reconstruction and membership inference attacks, but it "
              "does not provide guarantees against model extraction attacks.")
    verdicts = list(verify_sentences([quote, flipped, joined], passages, judge))
    assert [v.supported for v in verdicts] == [True, False, True]
    assert verdicts[0].passage == 1 and verdicts[0].reason == "quotes the passage"
    assert calls == [claim_text(flipped)]  # only the flipped claim reached the judge
    assert quoted_by("DP is useful.", passages, [1]) is None  # too short to call a quote
    assert quoted_by("Membership inference attacks are mitigated by encryption of the data.", passages, [1]) is None


def test_a_sentence_naming_what_the_corpus_never_mentions_is_unsupported_without_a_judge():
    from nistchat.engine.verification.verify import ungrounded_verdicts

    calls = []
    passages = [_p("AI actors should document risk tolerance and revisit it when contexts change.")]
    answer = ["The Colorado AI Act takes effect when systems are first deployed.",
              "AI actors should document risk tolerance."]
    flags = ungrounded_verdicts(answer, passages, "When does the Colorado AI Act take effect?", ["Colorado"])
    assert [(v.text, v.reason) for v in flags] == [(answer[0], "the documents never mention: Colorado")]
    assert ungrounded_verdicts(answer, passages, "When does the Colorado AI Act take effect?") == []
    verdicts = list(verify_sentences(answer, passages, lambda d, c: calls.append(c) or True,
                                     unknown_terms=["Colorado"]))
    assert [v.supported for v in verdicts] == [False, True] and len(calls) <= 1
    assert "Colorado" not in " ".join(calls)


def test_a_list_answer_of_another_length_than_asked_is_flagged_on_its_lead_in():
    answer = ("The four tiers are:\n1. Urgently needed [1].\n2. Needed, with more research [1].\n"
              "3. Needed, with foundational work [2].")
    v = count_mismatch(answer, 4)
    assert v is not None and not v.supported and v.text == "The four tiers are:"
    assert v.reason == "the question asks for 4 items; the answer lists 3" and v.text in split_sentences(answer)
    assert count_mismatch(answer, 3) is None and count_mismatch(answer, None) is None
    nested = "Two kinds:\n- Competing objectives, e.g.\n  - prefix injection\n  - refusal suppression\n- Mismatched generalization"
    assert count_mismatch(nested, 2) is None  # indented sub-points are not items
    assert count_mismatch("Prose that names one item only.", 4) is None  # no list, nothing to count
    assert count_mismatch("- only\n- two items", 5).text == "- only"  # no lead-in: the first item carries it
    padded = answer + "\n4. Needed, with foundational work [2]."  # a small reader repeats an item to reach four
    assert count_mismatch(padded, 4).reason == \
        "the question asks for 4 items; the answer lists 3 different ones (4 with repeats)"


def test_judge_calls_go_passage_by_passage_with_the_same_verdicts_in_sentence_order():
    passages = [P("Bias in data sets is systemic and harmful."), P("Security monitoring detects attacks on systems."),
                P("Red teaming exercises probe models for harms.")]
    answer = ["Security monitoring detects attacks [2].", "Bias is harmful in data sets [1].",
              "Monitoring detects attacks on systems [2].", "Harmful bias is systemic in data [1].",
              "Red teaming probes models [3]."]

    def run(order, per_sentence):
        calls = []

        def judge(document, claim):
            calls.append(document)
            return all(w in document.lower() for w in claim.lower().rstrip(".").split())
        verdicts = list(verify_sentences(answer, passages, judge, VerifySettings(order=order, per_sentence=per_sentence)))
        return verdicts, calls

    for tries in (1, 2, 3):
        by_sentence, sentence_calls = run("sentence", tries)
        by_passage, passage_calls = run("passage", tries)
        assert [v.text for v in by_passage] == answer  # yielded in the answer's order
        assert [(v.supported, v.passage) for v in by_passage] == [(v.supported, v.passage) for v in by_sentence]
        assert sorted(passage_calls) == sorted(sentence_calls)  # the same pairs judged
    _, sentence_calls = run("sentence", 1)
    _, passage_calls = run("passage", 1)
    switches = lambda calls: sum(a != b for a, b in zip(calls, calls[1:]))  # noqa: E731
    assert switches(passage_calls) < switches(sentence_calls)
    assert switches(passage_calls) == len(set(passage_calls)) - 1  # each document read in one run of calls


def test_a_verdict_is_yielded_before_later_sentences_are_judged():
    passages = [P("Security monitoring detects attacks on systems."), P("Red teaming exercises probe models.")]
    seen = []

    def judge(document, claim):
        seen.append(claim)
        return True
    stream = verify_sentences(["Red teaming exercises probe models [2].", "Monitoring detects attacks [1]."],
                              passages, judge, VerifySettings(per_sentence=1))
    first = next(stream)
    assert first.supported and len(seen) <= 2
    assert [v.supported for v in [first, *stream]] == [True, True]


def test_a_judge_holding_the_passages_is_asked_by_number_with_the_same_pairs():
    """`check_at`: the same (sentence, passage) pairs, the passage given by its number, never its text."""
    passages = [P("Bias in data sets is systemic."), P("Security monitoring detects attacks on the system.")]
    by_text, by_number = [], []

    def check(document, claim):
        by_text.append((passages.index(next(p for p in passages if p.text in document)) + 1, claim))
        return "monitoring" in document.lower() and "monitoring" in claim.lower()

    def check_at(number, claim):
        by_number.append((number, claim))
        return "monitoring" in passages[number - 1].text.lower() and "monitoring" in claim.lower()

    answer = ["Security monitoring detects attacks [1].", "Bias is systemic and everywhere."]
    plain = list(verify_sentences(answer, passages, check, VerifySettings(per_sentence=2)))
    numbered = list(verify_sentences(answer, passages, lambda d, c: pytest.fail("the text judge was asked"),
                                     VerifySettings(per_sentence=2), check_at=check_at))
    assert by_number == by_text and len(by_number) == 4  # each sentence tries both passages
    assert [(v.supported, v.passage) for v in numbered] == [(v.supported, v.passage) for v in plain] \
        == [(True, 2), (False, None)]


def test_a_yes_no_question_answered_in_its_own_words_is_flagged():
    """"Yes, the guide makes recommendations on it." says nothing a passage says; a small reader
    writes it whatever the passages settle."""
    v = bare_polarity("Yes, the guide makes recommendations on it [1].", "does the guide make recommendations on it?")
    assert v is not None and not v.supported and v.reason == BARE_POLARITY
    assert bare_polarity("Yes, the vendors checked it more than the auditors.",
                         "did the vendors check it more than the auditors?") is not None  # one changed form
    assert bare_polarity("Yes, the guide makes recommendations on it. (1)",
                         "does the guide make recommendations on it?") is not None  # "(1)" is a citation, not a sentence
    # any opening that agrees, as the premise check reads one: "Right", "Exactly", "That's correct"
    for opening in ("Right,", "Exactly,", "That's correct:", "Absolutely,"):
        assert bare_polarity(f"{opening} the guide makes recommendations on it.",
                             "does the guide make recommendations on it?") is not None, opening
    # the documents' names an answer spells out are the question's own; a number opens a yes/no question
    assert bare_polarity("Yes, NIST Special Publication 800-218A does cover model hosting.",
                         "does 800-218a cover model hosting?", "NIST.SP.800-218A Secure Software") is not None
    # a "No" (its negated verb is often the passage's), what a passage says, a second sentence, a
    # question that is not yes/no: not flagged
    assert bare_polarity("No, it does not mandate audits.", "does it set audits") is None
    assert bare_polarity("Yes, it is voluntary and flexible in use.", "is it mandatory for us") is None
    assert bare_polarity("Yes, the report covers it. It lists drift.", "does the report cover it") is None
    assert bare_polarity("The report covers drift.", "what does the report cover") is None
    assert bare_polarity("Yes, it covers drift and bias.", "what does the report cover") is None


def test_a_yes_against_the_sentence_that_says_no_is_flagged():
    """"Yes, there is a standard way …" where the sentence the question turns on says there is
    none: the reader's yes reflex, in words of its own, so the bare-yes check cannot see it."""
    asked = "is there a standard way to calibrate sprockets?"
    denied = "Currently there is no standard way to calibrate sprockets across vendors."
    v = yes_against_no("Yes, there is a standard way to calibrate sprockets for every vendor [1].", asked, denied)
    assert v is not None and not v.supported and v.reason == YES_AGAINST_NO
    assert yes_against_no("Yes, one standard way calibrates every sprocket.",
                          "so there is a standard way to calibrate sprockets, right", denied) is not None  # a tag asks too
    assert yes_against_no("Yes, one standard way calibrates every sprocket.",
                          "so there is a standard way to calibrate sprockets then?", denied) is not None  # so does a conclusion
    assert v.text.startswith("Yes, there is a standard way")
    assert yes_against_no("Right, vendors share one calibration method. It is yearly.", asked,
                          "Sprockets are not calibrated in a standard way.") is not None  # "not" over the asked words
    # the sentence agrees; its negation is about other words; the question or the answer negates
    # itself; the answer says no; the question is not yes/no; no sentence settles it: not flagged
    assert yes_against_no("Yes, there is one.", asked, "Sprockets are calibrated in a standard way.") is None
    assert yes_against_no("Yes, there is one.", asked, "Sprockets are calibrated yearly; no gadget is.") is None
    assert yes_against_no("Yes, there is none.", "is there no standard way to calibrate sprockets?", denied) is None
    assert yes_against_no("Yes, but it is not standard.", asked, denied) is None
    assert yes_against_no("No, there is no standard way.", asked, denied) is None
    assert yes_against_no("Yes, vendors do it yearly.", "how are sprockets calibrated?", denied) is None
    assert yes_against_no("Yes, there is one.", asked, "") is None
    # a word that denies its whole clause denies what comes before it too
    assert yes_against_no("Yes, exact gadget clones can be made.", "can exact gadget clones be made?",
                          "Exact gadget clones were shown to be impossible.") is not None


def counted(answer: str, question: str):
    return counted_not_listed(answer, question, answer_items(answer))


def test_an_answer_that_counts_what_was_asked_for_and_names_none_is_flagged():
    """"The guide sets out five practices." answers a question about its practices with nothing to
    act on, and leaves "the 3rd one" nothing to point at."""
    v = counted("The guide sets out five practices for tool vendors [2].", "what practices does the guide set out")
    assert v is not None and not v.supported and v.reason == COUNTED_NOT_LISTED
    assert v.text == "The guide sets out five practices for tool vendors [2]."
    assert counted("It describes several kinds of safeguards.", "which safeguards are described") is not None
    assert counted("There are 3 categories of harm.", "what harm categories are there") is not None
    # asked for "kinds", counted as "categories" (or the other way round): the same request for items
    assert counted("The report covers six gadget categories to support a shared vocabulary.",
                   "what kinds of gadget checks does the report cover?") is not None
    assert counted("It lists four types of sprocket faults.", "which sorts of faults does it list") is not None
    assert counted("It uses three typefaces.", "which sorts of faults does it list") is None  # no kind word
    # the items named, in a line list or in prose; a count that was asked for; a yes/no question
    assert counted("The guide sets out five practices:\n- scoping\n- testing", "what practices does it set") is None
    assert counted("It sets out five practices: scoping, testing and review.", "what practices does it set") is None
    assert counted("The guide sets out five practices.", "how many practices does the guide set out") is None
    assert counted("Yes, it sets out five practices.", "does the guide set out practices") is None
    # a count of something else than what was asked about, or a long answer with more in it
    assert counted("It was written by 12 authors.", "what practices does the guide set out") is None
    assert counted("One. Two. Three. It has five practices.", "what practices does the guide set out") is None


# -- a claim that documents agree needs a passage of each
def _two_documents():
    return [_p("Sprocket risk is the product of likelihood and magnitude.", doc="NIST.AI.100-1"),
            _p("Gadget reviews must be repeated every year.", doc="NIST.AI.600-1"),
            _p("Sprocket risk is the product of likelihood and magnitude, as in the framework.", doc="NIST.AI.600-1")]


def test_a_claim_of_agreement_is_judged_against_each_document():
    from nistchat.engine.verification.verify import claims_agreement
    assert claims_agreement("Both documents agree that sprocket risk is likelihood times magnitude [1].")
    assert claims_agreement("Yes, the profile says the same thing.")
    assert not claims_agreement("Both safety and security matter [1].")
    asked = []

    def judge(document, claim):  # a judge that finds the claim in any passage stating sprocket risk
        asked.append(document)
        return "sprocket risk" in document.lower()

    sentence = "Both documents agree that sprocket risk is the product of likelihood and magnitude [1]."
    [v] = verify_sentences([sentence], _two_documents(), judge)
    assert v.supported and v.passage == 1
    assert len(asked) == 2 and "as in the framework" in asked[1]  # the second try went to the other document


def test_a_claim_of_agreement_only_one_document_backs_is_unsupported():
    passages = _two_documents()[:2]
    sentence = "Both documents agree that sprocket risk is the product of likelihood and magnitude [1]."
    [v] = verify_sentences([sentence], passages, lambda d, c: "sprocket risk" in d.lower())
    assert not v.supported and v.reason == "only AI RMF says it, of the documents it says agree"
    # the same words without the claim of agreement need the one passage
    [v] = verify_sentences(["Sprocket risk is the product of likelihood and magnitude [1]."], passages,
                           lambda d, c: "sprocket risk" in d.lower())
    assert v.supported and v.passage == 1


def test_a_document_that_does_not_speak_of_the_thing_cannot_say_the_same_about_it():
    """A lenient judge nods at "both documents agree on X" for a passage of the other document that
    never mentions X: such a passage is not asked, and the claim has one document behind it."""
    passages = _two_documents()[:2]
    sentence = "Yes, both documents agree on the core definition of sprocket risk as the GenAI profile describes it [1]."
    asked = []
    [v] = verify_sentences([sentence], passages, lambda d, c: asked.append(d) or True)
    assert not v.supported and v.reason == "only AI RMF says it, of the documents it says agree"
    assert len(asked) == 1 and "Sprocket risk" in asked[0]  # the gadget passage was never put to the judge
    # among passages of one document that never speak of it, no passage may back it at all
    [v] = verify_sentences(["Both documents agree on the yearly gadget reviews [1]."], passages[:1], lambda d, c: True)
    assert not v.supported


def test_what_a_sentence_says_a_document_speaks_of():
    from nistchat.engine.verification.verify import mentioned
    assert mentioned("Yes, the framework also talks about sprocket drift and suggests checks.") == \
        ("the framework also", "sprocket drift")
    assert mentioned("The profile mentions gadget reviews as a control.")[1] == "gadget reviews"
    assert mentioned("It discusses sprocket risk in several ways.")[1] == "sprocket risk"
    # denied, or said of the thing rather than of a document: no claim that a passage holds it
    assert mentioned("The framework does not mention sprocket drift.") == ("", "")
    assert mentioned("Sprocket drift is addressed by yearly reviews.") == ("", "")
    assert mentioned("Sprockets must be calibrated yearly.") == ("", "")
    # what it says, reported in other words, is left to the judge: no words of it need be in a passage
    assert mentioned("The profile mentions that gadget owners should log each repair.") == ("", "")
    assert mentioned("It discusses how sprockets drift.") == ("", "")


def test_a_document_said_to_speak_of_a_thing_no_passage_names_is_unsupported():
    """A lenient judge nods at "the framework also talks about X" for a passage on something else;
    with no passage naming X, no judge is asked."""
    passages = _two_documents()[:2]
    asked = []
    sentence = "Yes, it also talks about sprocket drift and suggests reviews to manage it [2]."
    [v] = verify_sentences([sentence], passages, lambda d, c: asked.append(d) or True)
    assert not v.supported and v.reason == "no passage speaks of: sprocket drift" and not asked
    # a passage that names it is judged as usual
    [v] = verify_sentences(["Yes, it also talks about gadget reviews [1]."], passages, lambda d, c: True)
    assert v.supported and v.passage == 2


def test_a_document_said_to_speak_of_a_thing_only_another_document_names_is_unsupported():
    """"The AI RMF also talks about X" where only the other document's passage names X: that
    passage shows nothing of what the AI RMF speaks of."""
    passages = [_p("Govern is a cross-cutting function.", doc="NIST.AI.100-1"),
                _p("Gadget reviews must be repeated every year.", doc="NIST.AI.600-1", section="Reviews")]
    passages[1] = Passage(2, "y", "NIST.AI.600-1", "Generative AI Profile", "Reviews", "prose", None,
                          passages[1].text, 1.0)
    asked = []
    [v] = verify_sentences(["Yes, the AI RMF also talks about gadget reviews [1]."], passages,
                           lambda d, c: asked.append(d) or True)
    assert not v.supported and v.reason == "no passage of AI RMF (NIST AI 100-1) speaks of: gadget reviews" and not asked
    [v] = verify_sentences(["The GenAI Profile talks about gadget reviews [2]."], passages, lambda d, c: True)
    assert v.supported and v.passage == 2


def test_a_claim_of_agreement_among_passages_of_one_document_is_judged_as_usual():
    passages = [_p("Sprocket risk is the product of likelihood and magnitude.")]
    [v] = verify_sentences(["Both passages agree that sprocket risk is a product [1]."], passages,
                           lambda d, c: True)
    assert v.supported


def test_a_quote_of_one_document_does_not_pass_a_claim_of_agreement():
    passages = _two_documents()[:2]
    sentence = "Both documents agree that sprocket risk is the product of likelihood and magnitude."
    [v] = verify_sentences([sentence], passages, lambda d, c: False)
    assert not v.supported  # quoting the first passage is no check of the second


def test_document_names_in_a_claim_of_agreement_are_no_facts_to_find_in_each_passage():
    passages = [_p("Sprocket risk is the product of likelihood and magnitude.", doc="NIST.AI.100-1"),
                Passage(2, "y", "NIST.AI.600-1", "GenAI Profile", "Sec", "prose", None,
                        "Sprocket risk is the product of likelihood and magnitude here too.", 1.0)]
    sentence = "NIST.AI.100-1 and NIST.AI.600-1 agree that sprocket risk is the product of likelihood and magnitude."
    [v] = verify_sentences([sentence], passages, lambda d, c: "sprocket risk" in d.lower())
    assert v.supported


def test_a_draft_made_only_of_questions_is_flagged():
    for draft in ("¿Los documentos dicen que los engranajes se oxidan?", "Do sprockets rust? [2]",
                  "Rosten die Zahnräder schon, oder ist das noch unklar?\nWas sagt der Bericht?",
                  '[1] ¿Dicen las fuentes que "los engranajes se oxidan"? (1)'):
        v = asked_back(draft)
        assert v is not None and v.reason == ASKED_BACK and not v.supported
    for answer in ("Sprockets rust when wet [1]. Do gadgets? Not in the passages.", "Gadgets rust [1].", "",
                   "- Does the sprocket keep turning? [1]\n- Is the gadget secure? [1]"):  # a list of questions
        assert asked_back(answer) is None  # one statement is an answer
    open_question = "How can a sprocket keep turning while its teeth wear unevenly?"
    passage = Passage(1, "p", "S-1", "Sprockets", "Open questions", "prose", 1, f"Open questions remain. {open_question}", 1.0)
    assert asked_back(open_question, [passage]) is None and asked_back(open_question) is not None  # a question it asks

"""The premise check: what a question takes for granted, checked against passages the real index
retrieves from the real corpus, and the verdict on an answer that opens by agreeing with it."""
from __future__ import annotations

import pytest

from nistchat.engine.verification.premise import (AGREES_WITH_PREMISE, Premise, PremiseCheck, check, contradiction,
                                                   opening, opening_verdict, polar_claims, presuppositions, settling,
                                                   with_subject)
from nistchat.engine.types import Passage


@pytest.mark.parametrize("question, form, claim", [
    ("so the GenAI profile makes red-teaming a legal requirement, right?", "tag",
     "the GenAI profile makes red-teaming a legal requirement"),
    ("The SSDF profile replaces SP 800-218, correct? which one do we follow", "tag",
     "The SSDF profile replaces SP 800-218"),
    ("so the sprocket guide makes oiling mandatory, right", "tag", "the sprocket guide makes oiling mandatory"),
    ("gadgets need a yearly audit, correct.", "tag", "gadgets need a yearly audit"),
    ("is it true that the monitoring report ranks vendors?", "is_it_true", "the monitoring report ranks vendors"),
    ("why is the critical infrastructure profile already final, and when was it published?", "why",
     "the critical infrastructure profile already final"),
    ("since the AI RMF is a law, what are the penalties?", "fronted", "the AI RMF is a law"),
    ("so the sprocket guide makes oiling mandatory?", "declarative", "the sprocket guide makes oiling mandatory"),
    ("ok so gadget audits replace the yearly sprocket check then?", "declarative",
     "gadget audits replace the yearly sprocket check"),
    ("gadget audits replace the yearly sprocket check then?", "declarative",
     "gadget audits replace the yearly sprocket check"),
])
def test_each_form_of_question_yields_the_claim_it_takes_for_granted(question, form, claim):
    found = presuppositions(question)
    assert (found[0].form, found[0].claim, found[0].negated) == (form, claim, False)


@pytest.mark.parametrize("question", [
    "What does the MAP function do?",
    "does the AI RMF prescribe a risk tolerance?",
    "How many projects does SC 42 have in progress?",
    "which attacks does the adversarial ML report cover for generative AI",
    "list the GenAI profile's twelve risks",
    "can you explain evasion vs poisoning",
    "the gadget list in one line, ok",  # without a question mark, "ok" and "no" end requests
    "sprocket audits as a table, no bullets",
    "so where do i find the gadget list?",  # a statement drawn as a conclusion asks no question word
    "so, a table?",
    "and the sprocket one then?",
    "in short, is the gadget list final then?",  # a yes/no question of its own, before "then"
    "so tell me about gadget audits?",
])
def test_an_ordinary_question_takes_nothing_for_granted(question):
    assert presuppositions(question) == []


def test_a_yes_no_question_yields_the_claim_it_asks_about():
    assert polar_claims("ok, is the monitoring report binding on vendors?") == [
        Premise("the monitoring report binding on vendors", "polar")]
    assert polar_claims("is it on?") == [] and polar_claims("does the plan not cover X?") == []
    assert polar_claims("what does the MAP function do?") == []


def test_an_opposite_word_answers_a_yes_no_question_no(runtime):
    question = "are the plan's AI standards mandatory for US companies?"
    result = check(question, runtime.retrieve(question, k=6).passages)
    assert result.premises[0].form == "polar"
    assert result.contradicted is not None and result.contradicted.cue == "mandat/volunt"
    assert result.lead.startswith("Not quite.")


def test_a_negation_does_not_answer_a_yes_no_question(runtime):
    """Only an opposite word counts for a question that asks: "not" near two shared words is too
    weak a sign that the answer is No."""
    question = "does the AI RMF prescribe a risk tolerance for each organization?"
    result = check(question, runtime.retrieve(question, k=6).passages)
    assert result.premises and result.contradicted is None


def test_a_negated_premise_is_found_but_not_checked(runtime):
    question = "why can't the AI RMF be used by small companies?"
    (found,) = presuppositions(question)
    assert found.negated
    assert contradiction(found, runtime.retrieve(question, k=6).passages) is None


def test_an_opposite_word_in_a_retrieved_passage_contradicts_the_premise(runtime):
    question = "why are AI standards mandatory for US companies under the global engagement plan?"
    result = check(question, runtime.retrieve(question, k=6).passages)
    c = result.contradicted
    assert c is not None and c.cue == "mandat/volunt"
    assert "voluntary" in c.sentence.lower()
    assert result.lead.startswith("Not quite.") and c.sentence[:40] in result.lead and f"[{c.passage}]" in result.lead
    assert result.to_dict()["contradicted"]["passage"] == c.passage


def test_why_must_takes_for_granted_that_it_is_required(runtime):
    """ "must" says nothing in a claim's middle ("the tolerance each organization must use"), but
    "why must X …" asks why X is required: the passage saying the framework is voluntary denies it."""
    assert [p.obliged for p in presuppositions("why must sprocket makers oil every gadget?")] == [True]
    assert [p.obliged for p in presuppositions("why should sprocket makers oil every gadget?")] == [False]
    question = "why must every hospital adopt the AI RMF?"
    result = check(question, runtime.retrieve(question, k=6).passages)
    assert result.contradicted is not None and result.contradicted.cue == "mandat/volunt"
    assert "voluntary" in result.contradicted.sentence.lower() and result.lead.startswith("Not quite.")


def test_a_list_item_is_quoted_with_the_words_that_open_its_list():
    """ "Be … voluntary." names nothing alone: the lead quotes it after "The … strives to:"."""
    guide = Passage(1, "p1", "D", "Sprocket guide", "Attributes", "list", None,
                    "The sprocket guide strives to:\n1. Be cheap, quick and voluntary.\n2. Be read by all.", 0.0)
    claim = presuppositions("why must every gadget maker follow the sprocket guide?")[0]
    c = contradiction(claim, [guide])
    assert c is not None and c.sentence == "The sprocket guide strives to: 1. Be cheap, quick and voluntary."
    later = Passage(1, "p1", "D", "Sprocket guide", "Attributes", "list", None,
                    "The sprocket guide strives to:\n1. Be read by all.\n2. Be cheap, quick and voluntary.", 0.0)
    c = contradiction(claim, [later])  # a later item: the items between are left out
    assert c is not None and c.sentence == "The sprocket guide strives to: … 2. Be cheap, quick and voluntary."


def test_a_negation_over_the_premises_words_contradicts_it(runtime):
    question = "so the AI RMF prescribes the risk tolerance each organization must use, right?"
    c = check(question, runtime.retrieve(question, k=6).passages).contradicted
    assert c is not None and c.cue == "not"
    assert "does not prescribe risk tolerance" in c.sentence


def test_a_premise_the_passages_bear_out_is_not_contradicted(runtime):
    question = "why does the AI RMF say GOVERN applies to all stages of risk management?"
    result = check(question, runtime.retrieve(question, k=6).passages)
    assert result.premises and result.contradicted is None and result.lead == ""


def test_a_negated_subject_alone_is_no_contradiction(runtime):
    """ "… should not be used without SP 800-218" negates the document's name, not the claim."""
    question = "so SP 800-218A lists the practices for AI model development, right?"
    assert check(question, runtime.retrieve(question, k=6).passages).contradicted is None


def test_the_sentence_a_question_turns_on_is_prose_never_a_tables_cells():
    """A table's caption, header and row run together read as no quote under an answer."""
    table = Passage(rank=1, id="t:1", doc="D", title="T", section="S", kind="table", page=1, score=0.0,
                    text="Table 9 Sprocket tasks | Task | Priority |\n|---|---|\n| SP.1: audit every sprocket | High |")
    prose = Passage(rank=2, id="p:1", doc="D", title="T", section="S", kind="prose", page=1, score=0.0,
                    text="Every sprocket audit has a high priority in the plan.")
    aside = Passage(rank=2, id="p:2", doc="D", title="T", section="S", kind="prose", page=1, score=0.0,
                    text="This plan adds notes on sprocket tasks.")
    assert settling("what priority do sprocket audits have?", [table, prose]) == (
        2, "Every sprocket audit has a high priority in the plan.")
    # the table's row matches best: no quote, rather than a sentence beside the point
    assert settling("what priority do sprocket audit tasks have?", [table, aside]) is None


def test_a_pronoun_opening_a_claim_stands_for_the_subject_given():
    assert with_subject("it is binding", "the plan") == "the plan is binding"
    assert with_subject("its glossary is complete", "AI 100-2") == "AI 100-2's glossary is complete"
    assert with_subject("the plan is binding", "AI 100-5") == "the plan is binding"
    assert with_subject("it is binding", "") == "it is binding"


def test_a_follow_ups_premise_is_checked_as_said_of_the_document_it_leans_on(runtime):
    history = [{"role": "user", "content": "what is the plan for global engagement on ai standards about"},
               {"role": "assistant", "content": "How the US engages in international AI standards work."}]
    question = "so why is it binding on every vendor?"
    r = runtime.retrieve(question, k=6, history=history)
    subject = r.followup.subject
    assert subject.endswith("(NIST AI 100-5)"), subject
    assert check(question, r.passages).contradicted is None  # "it binding on every vendor": one word to check
    result = check(question, r.passages, subject)
    assert result.premises[0].claim == f"{subject} binding on every vendor"
    assert result.contradicted is not None and result.contradicted.cue == "bindin/volunt"


def test_forcing_is_the_opposite_of_voluntary():
    """ "vendors will be forced into …" claims what "voluntary" denies, as "mandatory" does."""
    passages = [Passage(rank=1, id="g1", doc="NIST.AI.100-5", title="Plan", section="The sprocket code", kind="prose",
                        page=1, text="Vendors adopt the sprocket code on a voluntary basis.", score=1.0)]
    (claim,) = presuppositions("so gadget vendors will be forced into the sprocket code?")
    c = contradiction(claim, passages)
    assert c is not None and c.cue == "forced/volunt"


def test_a_word_that_denies_its_whole_clause_contradicts_what_comes_before_it():
    """ "exact clones … were shown to be impossible" denies the clones, though no "not" precedes them."""
    passages = [Passage(rank=1, id="s1", doc="NIST.AI.100-2e2023", title="AML", section="Gadget making",
                        kind="prose", page=1, text="Exact gadget clones were shown to be impossible. Workshops make "
                                                   "gadgets that behave alike instead.", score=1.0)]
    (claim,) = presuppositions("so exact gadget clones can be made, right?")
    c = contradiction(claim, passages)
    assert c is not None and c.sentence.startswith("Exact gadget clones were shown")


def test_a_passage_denying_a_word_of_the_same_claim_contradicts_it(runtime):
    """ "not exhaustive" denies "complete" as much as "exhaustive" would."""
    question = "so the GenAI profile's account of its primary considerations is complete, right?"
    result = check(question, runtime.retrieve(question, k=6).passages)
    assert result.contradicted is not None and "is not exhaustive" in result.contradicted.sentence


@pytest.fixture(scope="module")
def mandatory(runtime) -> PremiseCheck:
    question = "why are AI standards mandatory for US companies under the global engagement plan?"
    result = check(question, runtime.retrieve(question, k=6).passages)
    assert result.contradicted is not None
    return result


@pytest.mark.parametrize("answer, expected", [
    ("Yes, under the plan AI standards are mandatory for companies [1].", "confirms"),
    ("AI standards are mandatory for US companies because the plan requires them [2]. Fines apply.", "confirms"),
    ("No. The plan says standards are adopted on a voluntary basis [1].", "corrects"),
    ("They are voluntary: standards are typically adopted on a voluntary basis [1].", "corrects"),
    ("AI standards are not mandatory for companies under the plan [1].", "corrects"),
    ("The plan describes how the US engages in international standards bodies [3].", "neither"),
])
def test_the_opening_sentence_is_told_apart(mandatory, answer, expected):
    assert opening(answer, mandatory.contradicted) == expected


def test_an_opening_that_confirms_a_contradicted_premise_gets_an_unsupported_verdict(mandatory):
    answer = "AI standards are mandatory for US companies under the plan [1]. Companies must comply."
    v = opening_verdict(answer, mandatory)
    assert v is not None and not v.supported
    assert v.text == "AI standards are mandatory for US companies under the plan [1]."
    assert v.reason == AGREES_WITH_PREMISE
    assert opening_verdict("No, they are voluntary [1].", mandatory) is None
    # the lead is not the reader's: its first sentence is the one after it
    assert opening_verdict(mandatory.lead + "They are voluntary [1].", mandatory) is None
    after_lead = opening_verdict(mandatory.lead + answer, mandatory)
    assert after_lead is not None and after_lead.text == v.text
    nothing_contradicted = PremiseCheck([Premise("AI standards mandatory", "why")])
    assert opening_verdict(answer, nothing_contradicted) is None


def test_a_fragment_that_opens_a_list_is_no_quote_and_a_long_one_loses_its_first_number():
    def passage(text):
        return Passage(1, "p1", "NIST.AI.100-1", "AI RMF", "", "child", None, text, 0.0)
    short = passage("The sprocket framework strives to: 1. Be voluntary. The sprocket framework is meant for all "
                    "who build sprockets.")
    assert settling("what is the sprocket framework for?", [short]) == (
        1, "The sprocket framework is meant for all who build sprockets.")
    long = passage("Of the many proposed ways to guard a sprocket, three main classes have proved resilient and can "
                   "protect sprocket gears: 1. Oiling.")
    ratio = passage("Every sprocket in the gearbox should keep a gear ratio of at least 2:1.")
    assert settling("what gear ratio should a sprocket keep?", [ratio]) == (1, ratio.text)  # no list number there
    assert settling("how are sprocket gears protected?", [long]) == (
        1, "Of the many proposed ways to guard a sprocket, three main classes have proved resilient and can "
           "protect sprocket gears:")


def test_the_sentence_a_question_turns_on_shares_its_rare_words_not_the_passages_common_ones():
    """Words every passage holds (the documents' topic) tell no sentence apart: counted alike, a
    short heading sharing the topic and one word of the question beat the sentence on its subject."""
    tiers = _passage(1, "Sprocket standards come in three tiers. Needed now and approved for sprocket standards. "
                       "Sprocket standards need wide input.")
    subject = _passage(2, "Gear oil use is a gap that needs more sprocket work first.")
    assert settling("is gear oil approved for sprocket standards?", [tiers, subject]) == (
        2, "Gear oil use is a gap that needs more sprocket work first.")


def test_of_sentences_weighing_the_same_the_higher_ranked_passages_is_the_quote():
    """Retrieval ranked the passages on the whole (resolved) question; a shorter sentence of a
    lower passage saying the same words is not closer to it."""
    first = _passage(1, "Every sprocket audit is logged by the gadget team each quarter.")
    second = _passage(2, "A sprocket audit is logged.  ")
    assert settling("is a sprocket audit logged?", [first, second]) == (1, first.text)


def test_a_quote_keeps_who_showed_it_when_et_al_ends_a_piece():
    """Split at "et al.", the rest of the sentence would be quoted opening with "[6] …"."""
    cited = _passage(1, "Sprockets wear out. Smith et al. [6] have shown sprocket gears to be impossible to copy exactly.")
    assert settling("can sprocket gears be copied exactly?", [cited]) == (
        1, "Smith et al. [6] have shown sprocket gears to be impossible to copy exactly.")


def _passage(rank: int, text: str) -> Passage:
    return Passage(rank, f"p{rank}", "D", "T", "S", "child", None, text, 0.0)

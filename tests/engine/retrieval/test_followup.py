"""Follow-ups resolved against the conversation (engine/retrieval/followup.py): item references,
scope that carries over and lets go, comparisons from both documents, turns that act on the
previous answer with no new search, and the gate that never refuses a follow-up of an answered
turn. The rules on plain text first, then the real retriever on the real index (session fixture)."""
import pytest

from nistchat.engine.answer.refusal import gate, vocabulary
from nistchat.engine.corpus.catalog import Catalog, DocEntry
from nistchat.engine.retrieval.focus import focused
from nistchat.engine.retrieval.followup import BRIEF_WORDS, answer_items, goes_on, passage_items, resolve
from nistchat.engine.types import Passage

RMF, GAI, AML, SSDF, MON = "NIST.AI.100-1", "NIST.AI.600-1", "NIST.AI.100-2e2023", "NIST.SP.800-218A", "NIST.AI.800-4"
CATALOG = Catalog([DocEntry(RMF, "NIST AI 100-1 Artificial Intelligence Risk Management Framework (AI RMF 1.0)"),
                   DocEntry(GAI, "NIST AI 600-1 Artificial Intelligence Risk Management Framework: Generative "
                                 "Artificial Intelligence Profile"),
                   DocEntry(AML, "NIST AI 100-2e2023 Adversarial Machine Learning"),
                   DocEntry(SSDF, "NIST SP 800-218A Secure Software Development Practices for Generative AI"),
                   DocEntry(MON, "NIST AI 800-4 Challenges to the Monitoring of Deployed AI Systems")])
GAI_RISKS = "The profile names these risks:\n1. CBRN Information [1]\n2. Confabulation [2]\n3. Data Privacy: leakage [3]"
SOURCE = {"rank": 1, "id": "x:1", "doc": GAI, "title": "GenAI Profile", "section": "Risks", "page": 4, "kind": "prose",
          "text": "Confabulation: the production of confidently stated but false content.", "cited": True}


def chat(*turns):
    """History messages from (question, answer[, sources]) pairs."""
    out = []
    for q, a, *sources in turns:
        out += [{"role": "user", "content": q}, {"role": "assistant", "content": a, "sources": sources[0] if sources else []}]
    return out


def test_list_items_of_an_answer():
    assert answer_items(GAI_RISKS) == ["CBRN Information", "Confabulation", "Data Privacy"]
    assert answer_items("Four kinds: evasion, poisoning, privacy and abuse attacks.") == [
        "evasion", "poisoning", "privacy", "abuse attacks"]
    assert answer_items("It is voluntary.") == []


def test_a_prose_list_starts_after_its_lead_in():
    """A sentence's opening word or clause is no item: "the first one" of a prose answer is the
    first thing it listed."""
    assert answer_items("Moreover, the guide warns of several harms, such as bias, drift and leakage.") == [
        "bias", "drift", "leakage"]
    assert answer_items("For example, staffing, budget and tooling need owners [2].")[:2] == ["staffing", "budget"]
    # a verb of saying leads in as "are" does: "It describes X, Y and Z"
    assert answer_items("It describes evasion, poisoning, privacy and abuse attacks [1].") == [
        "evasion", "poisoning", "privacy", "abuse attacks"]
    # a lone "including …" after a clause is no list
    assert answer_items("It is a culture present everywhere, including teams that buy or build tools.") == []


def test_a_prose_list_is_cut_to_its_items():
    """The subject and verb before a prose list, and a clause qualifying the whole list after it,
    belong to no item: "which of those" is searched with the things listed, not with the sentence.
    A verb after the list ("… that are …") leads into nothing."""
    assert answer_items("The plan adds sprockets, gadgets, levers, and spare wheels that are specific to the "
                        "line throughout its whole service life [2].") == ["sprockets", "gadgets", "levers",
                                                                           "spare wheels"]
    # a first item no longer than the others is kept whole
    assert answer_items("Gadget checks, sprocket audits and lever tests are required.")[:2] == [
        "Gadget checks", "sprocket audits"]


def test_commas_without_a_list_are_no_list():
    """Two parts without "and", or single words qualifying one thing, are prose: "the first one"
    must not point at "Yes"."""
    assert answer_items("Yes, the profile covers it for us.") == []
    assert answer_items("The plan aims for clear, specific, achievable goals for standards.") == []
    assert answer_items("Govern, map, measure, manage.") == ["Govern", "map", "measure", "manage"]
    # the last item joined in the answer's language
    assert answer_items("Las funciones son GOVERN, MAP, MEASURE y MANAGE.") == ["GOVERN", "MAP", "MEASURE", "MANAGE"]
    assert answer_items("During design, development, operation and/or retirement.")[-2:] == ["operation", "retirement"]


def test_an_item_reference_becomes_that_item_and_keeps_the_scope():
    r = resolve("ok, what does the second one mean?", chat(("which risks does the GAI profile list?", GAI_RISKS)),
                CATALOG)
    assert r.kind == "item" and "Confabulation" in r.question and r.scope == (GAI,) and r.leans_on_answered
    last = resolve("and the last one?", chat(("which risks does the GAI profile list?", GAI_RISKS)), CATALOG)
    assert "Data Privacy" in last.question
    assert last.ask == "and Data Privacy?"  # the reader is asked the item, not "the last one"
    # "the first step" names a thing of its own, not an item of the list
    assert resolve("is that the first step?", chat(("which risks does the GAI profile list?", GAI_RISKS)),
                   CATALOG).kind != "item"


def test_an_item_named_by_its_words_becomes_that_item():
    """"the sprocket one" names an item as "the 2nd one" does: searched and asked with it."""
    gadgets = "Sprocket audits; gadget calibration; widget sign-off."
    r = resolve("ok whats the gadget one", chat(("what checks does the GAI profile list?", gadgets)), CATALOG)
    assert r.kind == "item" and r.ask == "ok whats gadget calibration" and r.scope == (GAI,)
    assert r.question == "ok whats gadget calibration (what checks does the GAI profile list?)"
    # words no item holds, or more than one item holds, name no item
    assert resolve("is the other one safer?", chat(("what checks does the GAI profile list?", gadgets)),
                   CATALOG).kind != "item"
    both = "Gadget audits; gadget calibration; widget sign-off."
    assert resolve("whats the gadget one", chat(("what checks does the GAI profile list?", both)),
                   CATALOG).kind != "item"
    # an answer that only counted them: the list in its passage
    counted = chat(("what categories does the monitoring report use", "It uses three categories [1].", [CATEGORIES]))
    r = resolve("tell me more about the sprocket one", counted, CATALOG)
    assert r.kind == "item" and r.ask == "tell me more about Sprocket Monitoring"


CATEGORIES = {"rank": 1, "id": "m:7", "doc": MON, "title": "Monitoring", "section": "Summary", "page": 2,
              "kind": "prose", "cited": True,
              "text": "The report sorts what it found into categories:\n\n- Widget Monitoring: does it work?\n"
                      "- Gadget Monitoring: does it stay up?\n- Sprocket Monitoring: is it safe?\n\n"
                      "Section 3 groups the challenges:\n\n- Gaps\n- Barriers"}
FIGURE = {**CATEGORIES, "id": "m:2", "text": "A chart of the themes:\n* Practitioners:\n    * Primary: widgets\n"
                                             "    * Secondary: gadgets\n* Researchers:\n    * Primary: gadgets\n"
                                             "* Both:\n* Neither:"}


def test_the_first_list_of_a_passage_bulleted_or_a_table():
    assert passage_items(CATEGORIES["text"]) == ["Widget Monitoring", "Gadget Monitoring", "Sprocket Monitoring"]
    table = "Table 2\n\n| Kind | What |\n| --- | --- |\n| Alpha: first | a |\n| Beta | b |\n\nAfter the table."
    assert passage_items(table) == ["Alpha", "Beta"]
    assert passage_items("No list here.\n\n- only one") == []
    assert passage_items(FIGURE["text"]) == ["Practitioners", "Researchers", "Both", "Neither"]  # its top level


def test_an_item_of_a_list_the_answer_only_counted_is_read_from_its_passages():
    """The answer named the list's length, not its items: "the 2nd one" is the passage's 2nd."""
    history = chat(("what categories does the monitoring report use", "The report uses three categories [1].",
                    [CATEGORIES]))
    r = resolve("the 2nd one, what challenges does it have", history, CATALOG)
    assert r.kind == "item" and "Gadget Monitoring" in r.question and "m:7" in r.why
    assert r.ask == "Gadget Monitoring, what challenges does it have"  # the reader never saw that list
    # of two passages' lists, the one whose items share the question's words ("monitoring")
    both = chat(("what categories does the monitoring report use", "The report uses three categories [1].",
                 [FIGURE, CATEGORIES]))
    assert "Gadget Monitoring" in resolve("the 2nd one?", both, CATALOG).question
    # a longer ordinal than any list: not an item reference, a follow-up searched with the question
    assert resolve("the 9th one?", history, CATALOG).kind != "item"


def test_a_passage_list_sharing_only_the_documents_name_is_not_the_list_meant():
    """An answer in prose, beside a passage listing the report's aims: "number 2" is no aim of it."""
    aims = {**CATEGORIES, "id": "m:5", "title": "Monitoring Report", "section": "Purpose",
            "text": "The report aims to:\n- Describe monitoring practice\n- Support monitoring teams\n- Inform monitoring policy"}
    history = chat(("what gadget traits does the monitoring report stress", "A figure shows how the traits relate [1].",
                    [aims]))
    assert resolve("tell me more about number 2", history, CATALOG).kind != "item"
    traits = {**aims, "id": "m:6", "section": "Gadget traits",
              "text": "Traits stressed:\n- Sturdy gadgets\n- Quiet gadgets\n- Cheap gadgets"}
    history = chat(("what gadget traits does the monitoring report stress", "A figure shows how the traits relate [1].",
                    [aims, traits]))
    assert resolve("tell me more about number 2", history, CATALOG).slot == "Quiet gadgets"


def test_of_a_documents_lists_the_one_led_by_what_was_asked_is_pointed_into():
    """Every list of a document shares its name's words; the one whose lead-in says what was asked
    for is the one meant, and its item is named by its first sentence."""
    tasks = {**CATEGORIES, "id": "m:3", "title": "Monitoring Report", "section": "Tasks",
             "text": "The monitoring report assigns these tasks:\n- Report monitoring gaps. Monthly.\n"
                     "- Review monitoring logs\n- Rotate monitoring keys"}
    goals = {**tasks, "id": "m:4", "section": "Summary",
             "text": "The work aims at three goals:\n- Fewer outages. Outages cost money.\n- Faster fixes\n"
                     "- Safer releases. Each release is reviewed."}
    history = chat(("what goals does the monitoring report aim at", "It names three goals [1].", [tasks, goals]))
    r = resolve("more on the last one", history, CATALOG)
    assert "m:4" in r.why and r.ask == "more on Safer releases"


def test_a_choice_among_the_previous_answers_items_is_searched_with_their_names():
    history = chat(("which risks does the GAI profile list?", GAI_RISKS))
    r = resolve("ok and which of those is about made-up content?", history, CATALOG)
    assert r.question.startswith("ok and which of CBRN Information, Confabulation, Data Privacy is about made-up")
    assert r.scope == (GAI,) and r.leans_on_answered
    # no list before it: a plain follow-up, searched with the previous question
    plain = chat(("is the AI RMF voluntary?", "Yes, it is voluntary."))
    assert "Confabulation" not in resolve("which of those is binding?", plain, CATALOG).question


def test_an_ellipsis_after_a_drill_down_asks_the_same_of_another_item():
    history = chat(("what categories does the monitoring report use", "The report uses three categories [1].",
                    [CATEGORIES]),
                   ("the 2nd one, what challenges does it have", "It has these challenges."))
    r = resolve("and for sprocket monitoring?", history, CATALOG)
    assert r.question.startswith("sprocket monitoring, what challenges does it have") and "Gadget" not in r.question
    assert r.ask == "sprocket monitoring, what challenges does it have"  # as the drill-down was asked
    history += chat(("and for sprocket monitoring?", "Those challenges."))
    assert resolve("and widget monitoring", history, CATALOG).question.startswith("widget monitoring, what challenges")


def test_a_turn_naming_another_item_of_the_drilled_list_after_about_asks_of_that_item():
    listed = "The profile names these goals:\n- Gadget-ready sprockets [1]\n- Calibrated widgets [2]\n- Audited cogs [3]"
    history = chat(("which goals does the GAI profile name", listed),
                   ("tell me more about the 2nd one", "Calibrated widgets are checked each quarter."))
    for turn in ("what does it say about gadgets?", "and what does it say about gadgets?"):
        r = resolve(turn, history, CATALOG)
        assert r.kind == "item" and r.slot == "Gadget-ready sprockets", turn
        assert r.question.startswith("tell me more about Gadget-ready sprockets") and "widgets" not in r.question
        assert r.ask == "tell me more about Gadget-ready sprockets" and r.scope == (GAI,)
    # more of the item picked, or something no item names: searched with the drill-down, as before
    for turn in ("what does it say about their accuracy?", "and what does it say about accuracy?"):
        r = resolve(turn, history, CATALOG)
        assert r.kind == "follow_up" and "Calibrated widgets" in r.question, turn
        assert not r.slot  # a question of its own is no item to swap in ("about their accuracy")


def test_an_ordinal_after_a_drill_down_points_into_the_list_it_picked_from():
    listed = "The profile names these goals:\n- Gadget-ready sprockets [1]\n- Calibrated widgets [2]\n- Audited cogs [3]"
    # the drill-down's prose has commas enough for a list of its own: not what "the 3rd one" means
    drilled = ("tell me more about the 2nd one", "Calibrated widgets are checked for drift, wear, noise, and heat.")
    history = chat(("which goals does the GAI profile name", listed), drilled)
    r = resolve("and the 3rd one?", history, CATALOG)
    assert r.kind == "item" and r.slot == "Audited cogs" and r.ask == "tell me more about Audited cogs"
    assert "widgets" not in r.question and "3rd" not in r.question
    # a chain of them, and one naming an item after "about", keep the same list
    history += chat(("and the 3rd one?", "Cogs are audited yearly."))
    assert resolve("what about the first?", history, CATALOG).slot == "Gadget-ready sprockets"
    assert resolve("what does it say about widgets?", history, CATALOG).slot == "Calibrated widgets"
    # a turn with a question of its own is asked as typed, the item in place of the ordinal
    r = resolve("and the last one, who signs it off?", history, CATALOG)
    assert r.ask == "and Audited cogs, who signs it off?" and r.slot == "Audited cogs"


def test_a_turn_still_speaking_of_the_drilled_item_keeps_its_list_for_a_later_ordinal():
    """A rewrite of the drill-down's answer, or a question leaning on it, still speaks of the item
    picked: "and the 3rd one?" after it points into the list the drill-down picked from, not into
    a list the rewrite's prose or its passages happen to hold."""
    listed = "The profile names these goals:\n- Gadget-ready sprockets [1]\n- Calibrated widgets [2]\n- Audited cogs [3]"
    source = {**SOURCE, "doc": GAI, "text": "Gadget hazards:\n1. Drift\n2. Wear\n3. Noise"}
    history = chat(("which goals does the GAI profile name", listed),
                   ("tell me more about the 2nd one", "Calibrated widgets are checked each quarter.", [source]))
    for between in (("shorter please", "Widgets: checked, tuned, logged, and sealed.", [source]),
                    ("who signs it off?", "The owner, the auditor, the lead, and the clerk.", [source])):
        r = resolve("and the 3rd one?", history + chat(between), CATALOG)
        assert r.kind == "item" and r.slot == "Audited cogs" and r.ask == "tell me more about Audited cogs", between
        assert "Noise" not in r.question and "lead" not in r.question
        r = resolve("what does it say about gadgets?", history + chat(between), CATALOG)
        assert r.slot == "Gadget-ready sprockets", between
    # a new question drops the list: its ordinal points into its own answer again
    fresh = history + chat(("which gadget hazards does the profile list?", "1. Drift\n2. Wear\n3. Noise", [source]))
    assert resolve("and the 3rd one?", fresh, CATALOG).slot == "Noise"


def test_a_request_pointing_at_many_after_a_drill_down_rewrites_the_list():
    """"put those in a table" after "tell me more about the 2nd one": the list is what is meant. Given
    the one item's answer, a small reader tabulated a table from the drill-down's passages instead."""
    listed = "The profile names these goals:\n- Gadget-ready sprockets\n- Calibrated widgets\n- Audited cogs"
    other = {**SOURCE, "id": "x:2", "text": "Widgets are calibrated each quarter."}
    history = chat(("which goals does the GAI profile name", listed, [SOURCE]),
                   ("tell me more about the 2nd one", "Calibrated widgets are checked each quarter.", [other]))
    for turn in ("put those in a table please", "all of them in one line for my boss"):
        r = resolve(turn, history, CATALOG)
        assert r.kind == "acts_on_previous" and r.question == "which goals does the GAI profile name", turn
        assert r.ask.endswith(listed) and [p.id for p in r.reuse] == ["x:1"] and r.rewritten == listed, turn
    # one thing pointed at, or no drill-down before: the previous answer, as before
    for turn, past in (("put that in a table", history),
                       ("put those in a table", chat(("which goals does the GAI profile name", listed, [SOURCE])))):
        r = resolve(turn, past, CATALOG)
        assert r.rewritten == past[-1]["content"] and r.ask.endswith(past[-1]["content"]), turn


def test_a_chain_of_ellipses_swaps_the_name_and_keeps_the_document():
    history = chat(("what is the purpose of the map function in the AI RMF", "MAP establishes context."),
                   ("right, and MEASURE?", "MEASURE analyzes risk."))
    r = resolve("and govern", history, CATALOG)
    assert r.question.startswith("what is the purpose of the govern function in the AI RMF")
    assert "MEASURE" not in r.question and r.scope == (RMF,)
    assert r.ask == r.question  # the reader is asked the whole question, not "and govern"


def test_an_ellipsis_with_no_name_to_swap_asks_the_reader_about_its_own_words_in_context():
    history = chat(("how does the monitoring report describe gadget drift", "It describes it as slow change."))
    r = resolve("and the sprocket kind?", history, CATALOG)
    assert r.question == "how does the monitoring report describe gadget drift and the sprocket kind?"
    assert r.focus == "sprocket kind"
    assert r.ask == "What do the passages say about sprocket kind, in the context of: " \
                    "how does the monitoring report describe gadget drift?"
    place = resolve("and in the gadget section?", history, CATALOG)
    assert place.ask == "What do the passages say in the gadget section, in the context of: " \
                        "how does the monitoring report describe gadget drift?"


def test_an_ellipsis_asking_a_clause_of_its_own_is_asked_about_its_topic_or_as_typed():
    """"and what does it say about X?" asks about X; a clause naming no topic is asked as typed: put
    whole into the ask it read "What do the passages say about does it …", and the reader said so."""
    history = chat(("how does the monitoring report describe gadget drift", "It describes it as slow change."))
    about = resolve("and what does it say about sprocket wear?", history, CATALOG)
    assert about.focus == "sprocket wear"
    assert about.ask == "What do the passages say about sprocket wear, in the context of: " \
                        "how does the monitoring report describe gadget drift?"
    own = resolve("and how do they measure it?", history, CATALOG)
    assert own.kind == "follow_up" and own.focus == "" and own.ask == ""


def test_scope_carries_over_a_correction_replaces_it_a_new_topic_drops_it():
    history = chat(("what does the AML taxonomy say about evasion attacks?", "Evasion alters inputs."))
    assert resolve("why does it matter?", history, CATALOG).scope == (AML,)
    corrected = resolve("no, i meant the SSDF, what does it say about model weights", history, CATALOG)
    assert corrected.kind == "correction" and corrected.scope == (SSDF,) and "model weights" in corrected.question
    fresh = resolve("new question: how is monitoring done after deployment", history, CATALOG)
    assert fresh.kind == "new_topic" and fresh.scope == () and not fresh.resolved
    assert fresh.question == "how is monitoring done after deployment"
    after_filler = resolve("ok different thing. what does the GAI profile say about gadget provenance?", history, CATALOG)
    assert after_filler.kind == "new_topic" and after_filler.scope == (GAI,)
    assert after_filler.question == "what does the GAI profile say about gadget provenance?"
    standalone = resolve("How should organisations monitor deployed AI systems for drift over time?", history, CATALOG)
    assert not standalone.resolved and standalone.scope == ()


def test_a_correction_naming_another_identifier_searches_for_it_instead():
    """"no, I meant PW.4.2": the identifier meant replaces the one asked about; searched with both,
    the passage on the wrong one came first."""
    history = chat(("in the SSDF what does PW.4.1 say about sprockets", "It says to audit them."))
    r = resolve("oops, make that PW.4.2 instead", history, CATALOG)
    assert r.kind == "correction" and r.question == "in the SSDF what does PW.4.2 say about sprockets"
    assert r.scope == (SSDF,)


def test_a_correction_asking_of_the_identifier_it_meant_asks_the_question_that_named_the_wrong_one():
    """After a follow-up, "i meant PW.4.2, what's in that one" asks of PW.4.2 what the question
    naming PW.4.1 asked, not the follow-up's own question; a correction that only names the one
    meant still corrects the last question."""
    history = chat(("in the SSDF what does PW.4.1 say about sprockets", "It says to audit them."),
                   ("who should do that", "The sprocket team."))
    r = resolve("wait, i meant PW.4.2 not 4.1, what's in that one", history, CATALOG)
    assert r.kind == "correction" and r.question == "in the SSDF what does PW.4.2 say about sprockets"
    asked = resolve("sorry, i meant PW.4.2 - who signs off the gadget audits?", history, CATALOG)
    assert asked.question == "in the SSDF what does PW.4.2 say about sprockets who signs off the gadget audits?"
    should = resolve("sorry, i meant PW.4.2, should the gadget team sign it off?", history, CATALOG)
    assert should.question == "in the SSDF what does PW.4.2 say about sprockets should the gadget team sign it off?"
    named = resolve("oops, make that PW.4.2 instead", history, CATALOG)
    assert named.question == "in the SSDF what does PW.4.2 say about sprockets who should do that"
    assert r.scope == asked.scope == named.scope == (SSDF,)


def test_a_request_for_more_of_what_was_said_leans_on_it():
    """"give me an example" names nothing: searched alone it lost the conversation's topic and
    scope, and the turn after it leaned on it alone."""
    history = chat(("how does the GAI profile define sprocket drift", "Drift is a change in sprockets [1]."))
    for more in ("give me an example", "any examples?", "such as?", "like what?", "go on", "can you expand on that"):
        r = resolve(more, history, CATALOG)
        assert r.kind == "follow_up" and r.scope == (GAI,) and r.leans_on_answered, more
        assert r.question.startswith("how does the GAI profile define sprocket drift"), more
        assert goes_on(more), more
    standalone = resolve("give me examples of gadget audits in the monitoring report", history, CATALOG)
    assert standalone.kind == "standalone" and standalone.scope == (MON,)


def test_a_turn_going_on_from_the_last_one_is_never_small_talk():
    assert goes_on("and open gadgets??") and goes_on("ok and sprocket drift?")
    assert not goes_on("thanks!") and not goes_on("hi there") and not goes_on("what about it?")


def test_a_turn_opening_with_and_keeps_the_documents_however_many_words_it_has():
    """"and …" / "what about …" continues the conversation: searched as typed, in its documents."""
    history = chat(("what does the AML taxonomy say about evasion attacks?", "Evasion alters inputs."))
    r = resolve("and which defences against poisoning of training data do the authors describe", history, CATALOG)
    assert r.kind == "follow_up" and r.scope == (AML,) and r.leans_on_answered
    assert r.question == "and which defences against poisoning of training data do the authors describe"
    # the same words without the opening stand alone, and an opening naming a document switches to it
    assert resolve("which defences against poisoning of training data do the authors describe", history,
                   CATALOG).scope == ()
    assert resolve("and which defences against poisoning does the SSDF profile describe for model builders",
                   history, CATALOG).scope == (SSDF,)


def test_the_x_one_names_a_document_of_the_kind_just_asked_about():
    """"the generative AI one" after a question about profiles is the Generative AI Profile."""
    ci = "NIST.AI.CI-Profile-Concept-Note"
    catalog = Catalog([DocEntry(RMF, "NIST AI 100-1 Artificial Intelligence Risk Management Framework (AI RMF 1.0)"),
                       DocEntry(GAI, "NIST AI 600-1 Artificial Intelligence Risk Management Framework: Generative "
                                     "Artificial Intelligence Profile"),
                       DocEntry(ci, "Concept Note: Artificial Intelligence Risk Management Framework: Trustworthy AI "
                                    "in Critical Infrastructure Profile")])
    history = chat(("how are profiles used with the AI RMF?", "A profile implements the functions for a setting."))
    r = resolve("who wrote the generative ai one", history, catalog)
    assert r.scope == (GAI,) and r.kind == "comparison"
    later = resolve("and the critical infrastructure one?", history + chat(("who wrote the generative ai one", "NIST.")),
                    catalog)
    assert later.scope == (ci,)
    # "one" standing for an item, or a noun that names no document, is no document
    assert resolve("and the second one?", history, catalog).scope == (RMF,)
    assert resolve("what about the other one?", chat(("what is a risk tier?", "A tier.")), catalog).scope == ()


def test_a_turn_whose_subject_is_a_pronoun_leans_on_the_document_discussed():
    """However many topic words it has: its subject is what the conversation was about."""
    history = chat(("what does the AML taxonomy say about evasion attacks?", "Evasion alters inputs."))
    leaning = resolve("so it recommends one fixed defence for every single deployment, right?", history, CATALOG)
    assert leaning.kind == "follow_up" and leaning.scope == (AML,) and leaning.subject == CATALOG.display[AML]
    # a pronoun that stands for nothing, and a turn naming its document, carry no subject
    assert resolve("is it true that evasion attacks always need white-box model access?", history,
                   CATALOG).subject == ""
    assert resolve("so the SSDF profile recommends fixed defences for every deployment?", history,
                   CATALOG).subject == ""


def test_a_turn_asking_about_it_or_there_leans_on_the_document_discussed():
    """"would it suggest", "in it", "there", "it" as the last word: the pronoun is where to look,
    however many words the turn names of its own (up to eight); a pronoun after "and" stands for
    the turn's own noun."""
    history = chat(("what does the AML taxonomy say about evasion attacks?", "Evasion alters inputs."))
    for turn in ("which sprocket audits would it suggest for gadget widgets", "which widget examples are described in it",
                 "how many sprockets were there?", "whats gadget drift there", "so if we oil the sprockets that stops it, right",
                 "do gadget widgets cause it?"):
        r = resolve(turn, history, CATALOG)
        assert r.kind == "follow_up" and r.scope == (AML,), turn
        assert r.question == f"what does the AML taxonomy say about evasion attacks? {turn}"
    for turn in ("what is a gadget sprocket and why is it used in widget audits", "what are gadget sprockets and which widget audits check it",
                 "is it true that sprockets always need gadget widgets"):
        assert resolve(turn, history, CATALOG).kind == "standalone", turn


def test_an_acronym_the_whole_corpus_shares_names_nothing_of_the_turns_own():
    """"NIST" and "AI" stand in every document: a turn pointing back ("under that heading") with
    one of them still leans on the conversation; an acronym of its own ("GDPR") or a framework id
    makes it a question of its own, and so does an acronym the corpus shares without words
    pointing back (a "that" opening a clause is no pronoun)."""
    history = chat(("what does the AML taxonomy say about evasion attacks?", "Evasion alters inputs."))
    for turn in ("which sprockets does NIST list under that heading?", "how do AI sprockets fit in this gadget?"):
        r = resolve(turn, history, CATALOG)
        assert r.kind == "follow_up" and r.scope == (AML,), turn
    for turn in ("which sprockets does GDPR list under that heading?", "what does GOVERN 1.2 say about this gadget?",
                 "does NIST say that AI sprockets wear?", "what does NIST mean by AI that is gadget-safe?"):
        assert resolve(turn, history, CATALOG).kind == "standalone", turn


def test_a_comparison_keeps_both_documents():
    r = resolve("is the GAI Profile's the same?", chat(("how does the AI RMF define harm?", "Harm to people.")), CATALOG)
    assert r.kind == "comparison" and r.compare and set(r.scope) == {RMF, GAI}
    # the question, asked of both, less the name: "it" in its place, so the page shows a sentence
    assert r.question.startswith("how does it define harm?")
    switch = resolve("and what does the SSDF say about it?", chat(("how does the AI RMF define harm?", "Harm.")), CATALOG)
    assert switch.scope == (SSDF,) and not switch.compare and not switch.ask


def test_a_turn_whose_only_topic_words_name_a_document_leans_on_the_conversation():
    """"does <document> give advice on it?" has a pronoun and the document's name: the name is no topic."""
    history = chat(("how does the AI RMF define harm?", "Harm to people."))
    r = resolve("does the secure software development framework give advice on it?", history, CATALOG)
    assert r.kind == "comparison" and r.scope == (SSDF,) and r.question.startswith("how does it define harm?")


def test_a_short_question_asking_for_a_language_leans_on_the_conversation():
    """Asking for the answer's language speaks to the conversation: "the sign-off" is the one just
    discussed, so the earlier question is searched with it, without the request."""
    history = chat(("what does the SSDF profile say about release reviews?", "A reviewer signs off [1]."))
    r = resolve("in German please: who owns the final sign-off?", history, CATALOG)
    assert r.kind == "follow_up" and r.scope == (SSDF,)
    assert r.question == "what does the SSDF profile say about release reviews? who owns the final sign-off?"
    # without the request, the same words stand alone
    assert resolve("who owns the final sign-off?", history, CATALOG).kind != "follow_up"


def test_a_turn_left_in_another_language_leans_by_its_own_and_or_its_pointing_words():
    """When no translation came, the English rules see nothing in a Spanish, German or French
    turn: its own language's "and", or a word pointing back, makes it lean on the conversation; a
    question of its own, and German "gibt es" ("is there"), do not."""
    history = chat(("what does the SSDF profile say about release reviews?", "A reviewer signs off [1]."))
    for turn in ("¿y quién firma al final?", "quién es responsable de esa revisión?", "und wer zeichnet ab?",
                 "wie lange dauert es?", "wer ist dafür zuständig?", "et qui signe à la fin ?",
                 "qui est responsable de cette roue ?", "que dit-il des engrenages ?",
                 "et qu'est-ce qu'il recommande pour les rouages ?", "qui signe ce rapport ?"):
        r = resolve(turn, history, CATALOG)
        assert r.kind == "follow_up" and r.scope == (SSDF,) and r.leans_on_answered, turn
        assert r.question == f"what does the SSDF profile say about release reviews? {turn}"
    for turn in ("qué dice el marco sobre los engranajes de prueba?", "welche Risiken gibt es bei Zahnrädern?",
                 "quels sont les risques des engrenages pour les entreprises ?",
                 "qu'est-ce que la gouvernance des engrenages ?", "combien de rouages y a-t-il dans le cadre ?",
                 "faut-il documenter les engrenages ?", "il y a combien de rouages dans le cadre ?"):
        assert resolve(turn, history, CATALOG).kind == "standalone", turn


def test_a_documents_name_is_cut_out_or_put_as_it():
    assert CATALOG.without_names("how does the AI RMF define harm?") == "how does define harm?"
    assert CATALOG.without_names("how does the AI RMF define harm?", "it") == "how does it define harm?"
    assert CATALOG.without_names("what is the AI RMF's definition of harm?", "it") == "what is its definition of harm?"
    assert CATALOG.without_names("how do the AI RMF and the GAI Profile differ?", "it") == "how do it differ?"
    assert CATALOG.without_names("is the GAI Profile's the same?", "it") == "is the same?"


def test_a_documents_name_goes_with_its_series():
    """"NIST SP 800-218A" is one name: cut out, it leaves no "NIST SP" behind."""
    assert CATALOG.without_names("what does NIST SP 800-218A add for sprockets?", "it") == "what does it add for sprockets?"
    assert CATALOG.without_names("does SP 800-218A cover gadgets?", "it") == "does it cover gadgets?"
    assert CATALOG.without_names("is the NIST AI RMF the same?", "it") == "is it the same?"
    assert CATALOG.named("what does NIST SP 800-218A add?") == [SSDF]


def test_a_correction_after_a_comparison_compares_with_the_document_meant():
    """"no, I meant the GAI profile" after "does the AI RMF say the same?" asks the same comparison
    of the document meant, with the one compared before; so does it after a rewrite of that answer."""
    history = chat(("what does the SSDF profile say about sprocket keys?", "Keep them locked [1].", [SOURCE]),
                   ("does the AI RMF say anything similar?", "The SSDF profile does [1]; the AI RMF does not [2].",
                    [SOURCE]))
    r = resolve("no, I meant the GAI profile", history, CATALOG)
    assert r.kind == "comparison" and r.compare and r.scope == (SSDF, GAI)
    assert r.ask.startswith('does the GAI profile say anything similar? (the earlier question: "what does the SSDF '
                            'profile say about sprocket keys?")')
    rewritten = history + chat(("in one sentence please", "Only the SSDF profile keeps sprocket keys locked [1].",
                                [SOURCE]))
    assert resolve("no, I meant the GAI profile", rewritten, CATALOG).scope == (SSDF, GAI)
    # after a question about one document, the document meant replaces it
    assert resolve("no, I meant the GAI profile", history[:2], CATALOG).scope == (GAI,)


def test_a_brief_rewrite_of_a_long_answer_asks_for_one_short_sentence():
    """Given a long answer and the plain ask, the small reader copied it whole; a short answer, or a
    request for another form, keeps the plain ask."""
    long = " ".join(f"{n}. Oil gadget {n} before each shift of the sprocket line." for n in range(1, 9))
    history = chat(("how are gadgets kept?", long, [SOURCE]))
    for turn in ("in one sentence for my boss", "shorter please", "tl;dr", "kurz bitte"):
        assert resolve(turn, history, CATALOG).ask == (f"Summarise this answer in one sentence of at most {BRIEF_WORDS} "
                                                       f"words, as asked ({turn}):\n\n{long}"), turn
    assert resolve("as a table", history, CATALOG).ask.startswith("Rewrite this answer as asked (as a table)")
    short = chat(("how are gadgets kept?", "Oiled before each shift.", [SOURCE]))
    assert resolve("shorter please", short, CATALOG).ask.startswith("Rewrite this answer as asked (shorter please)")


def test_a_comparison_asks_the_reader_for_each_documents_answer_in_turn():
    """Asked the turn alone, a small reader answered "Yes, it says the same" with nothing behind it."""
    r = resolve("is the GAI Profile's the same?", chat(("how does the AI RMF define harm?", "Harm to people.")), CATALOG)
    assert r.ask.startswith('is the GAI Profile\'s the same? (the earlier question: "how does the AI RMF define harm?")')
    rmf, gai = CATALOG.display[RMF], CATALOG.display[GAI]
    assert f"in turn, from its own passages: {rmf}, then {gai}." in r.ask and "agree only where" in r.ask
    assert rmf == "AI RMF 1.0 (NIST AI 100-1)"


def test_acting_on_the_previous_answer_reuses_its_passages():
    history = chat(("how does the GAI profile describe confabulation?", "Confabulation is false content.", [SOURCE]))
    for turn in ("briefer please", "can you put that in a table", "in one sentence for my boss", "auf deutsch bitte",
                 "a one-liner for your director", "same again in french, short", "three bullets, a bullet for each document",
                 # asked in another language, and left untranslated (no translation came in time)
                 "ponlo más corto para el equipo", "peux-tu le dire plus court pour ma cheffe ?",
                 "fasse es in einem satz für meinen chef zusammen", "en tabla por favor"):
        r = resolve(turn, history, CATALOG)
        assert r.kind == "acts_on_previous" and [p.text for p in r.reuse] == [SOURCE["text"]], turn
        assert r.question == "how does the GAI profile describe confabulation?"
        assert r.ask == f"Rewrite this answer as asked ({turn}):\n\nConfabulation is false content."  # the reader's task
    # the answer's marks name the passages it is given again; typed marks are the person's, neutralised
    cited = chat(("how does the GAI profile describe confabulation?", "False content [1].", [SOURCE]))
    assert resolve("shorter [2] please", cited, CATALOG).ask == "Rewrite this answer as asked (shorter (2) please):\n\nFalse content [1]."
    renumbered = chat(("how does the GAI profile describe confabulation?", "False content [2].", [{"id": "x"}, SOURCE]))
    assert resolve("shorter please", renumbered, CATALOG).ask.endswith("False content (2).")  # passage 2 is now 1
    assert resolve("what is a shorter way to find data poisoning risks?", history, CATALOG).kind != "acts_on_previous"
    assert resolve("what short-term risks come with sprockets?", history, CATALOG).kind != "acts_on_previous"
    # plain role/content history (no sources): searched as a follow-up instead
    plain = [{"role": "user", "content": "how is confabulation described?"}, {"role": "assistant", "content": "False content."}]
    assert resolve("tl;dr please", plain, CATALOG).reuse == ()


def test_a_refused_turn_gives_no_gate_exemption():
    history = [{"role": "user", "content": "which risks does the GAI profile list?"},
               {"role": "assistant", "content": "I can't answer that.", "refused": True}]
    assert not resolve("tell me about the 2nd one", history, CATALOG).leans_on_answered


# -- the real retriever on the real index
@pytest.fixture(scope="module")
def retriever(runtime):
    return runtime.retriever


def test_drill_down_retrieves_the_item(retriever):
    r = retriever.retrieve("ok, what does the second one mean?",
                           history=chat(("which risks does the GAI profile list?", GAI_RISKS)))
    q = r.trace.stage("query").items[0]
    assert q["kind"] == "item" and "Confabulation" in q["search_text"] and q["documents"] == [GAI]
    assert all(p.doc == GAI for p in r.passages) and any("confabulation" in p.text.lower() for p in r.passages[:3])
    assert r.followup.leans_on_answered


def test_comparison_retrieves_from_both_documents(retriever):
    r = retriever.retrieve("is the GAI Profile's the same?",
                           history=chat(("what is risk according to the AI RMF?", "A composite measure of probability.")))
    assert {p.doc for p in r.passages} == {RMF, GAI}
    assert r.passages[0].doc != r.passages[1].doc  # taken in turns: the best of each first
    assert len(r.passages) <= 6 and r.trace.stage("query").items[0]["compare"]


def test_acting_on_the_previous_answer_runs_no_search(retriever, runtime):
    first = retriever.retrieve("how does the GAI profile describe confabulation?")
    sources = [{**p.to_dict(), "cited": i == 0} for i, p in enumerate(first.passages)]
    r = retriever.retrieve("as a bullet list pls",
                           history=chat(("how does the GAI profile describe confabulation?", "It is false content.", sources)))
    assert [p.id for p in r.passages] == [p.id for p in first.passages]
    assert r.trace.stage("dense") is None and r.trace.stage("bm25") is None
    assert not gate(r, runtime.settings, runtime.models.optional("embedder"), vocabulary(runtime.index)).refuse


def test_the_gate_never_refuses_a_follow_up_of_an_answered_turn(retriever, runtime):
    vocab, embedder = vocabulary(runtime.index), runtime.models.optional("embedder")
    settings = runtime.settings
    answered = retriever.retrieve("say more about the 2nd one",
                                  history=chat(("which risks does the GAI profile list?", GAI_RISKS)))
    g = gate(answered, settings, embedder, vocab)
    assert not g.refuse and g.rule == "follow_up"
    alone = retriever.retrieve("say more about the 2nd one")
    assert alone.followup is not None and not alone.followup.leans_on_answered
    # a name the corpus never mentions still counts against a follow-up
    unknown = retriever.retrieve("and what about Zorblatt?", history=chat(("how is confabulation described?", "False content.")))
    assert gate(unknown, settings, embedder, vocab).unknown_terms == ["Zorblatt"]


def test_a_follow_up_reads_first_the_passage_whose_heading_its_own_words_name(retriever):
    history = chat(("what does the aml report say about evasion attacks on predictive ai",
                    "They modify test samples to change what the model predicts."))
    r = retriever.retrieve("and poisoning attacks?", history=history)
    assert r.followup.focus == "poisoning attacks"
    assert r.passages[0].section.endswith("Poisoning Attacks and Mitigations"), [p.section for p in r.passages]
    assert [p.rank for p in r.passages] == list(range(1, len(r.passages) + 1))
    assert "moved first" in r.trace.stage("focus").note
    # the same passages as without the move, only their order changed
    searched = retriever.retrieve(r.followup.question)
    assert {p.id for p in r.passages} == {p.id for p in searched.passages}


def test_a_heading_is_named_by_all_its_words_or_by_two_of_them():
    def passage(section):
        return Passage(rank=1, id=section, doc=GAI, title="GenAI Profile", section=section, kind="prose", page=1,
                       text="…", score=0.0)

    found = [passage("2. Overview > 2.1. Gadget Safety"), passage("3.3 Open Questions > 3.3.3 When to Audit Deployed Systems"),
             passage("2. Overview > 2.4. Sprocket Audits"), passage("2.6. Widget Drift and Decay")]
    assert focused(found, "sprocket audits")[1].section.endswith("Sprocket Audits")
    assert focused(found, "widget drift")[1].section.endswith("Decay")
    ordered, moved = focused(found, "who audits")  # one word of a longer heading is too weak a sign
    assert moved is None and ordered == found
    assert [p.rank for p in focused(found, "sprocket audits")[0]] == [1, 2, 3, 4]
    assert focused(found, "gadget safety")[1] is None  # already first


def test_a_number_after_a_word_for_a_place_in_a_list_points_at_that_item():
    history = chat(("which goals does the GAI profile name", GAI_RISKS))
    for ref in ("tell me more about number 2", "and no. 2?", "what does item 2 cover", "explain #2"):
        r = resolve(ref, history, CATALOG)
        assert r.kind == "item" and r.slot == "Confabulation", ref
    assert resolve("and what about MEASURE 2?", history, CATALOG).kind != "item"


def test_a_second_switch_of_document_asks_the_question_both_asked():
    """"and the SSDF one?" after "what about the GAI profile": the first question asked of the
    SSDF, not the first question followed by the words of the turn that switched."""
    history = chat(("what does the AML taxonomy say about sprocket risk", "It names three [1]."),
                   ("what about the GAI profile", "It names two [2]."))
    r = resolve("and the SSDF one?", history, CATALOG)
    assert r.kind == "comparison" and r.scope == (SSDF,)
    assert r.question == "what does it say about sprocket risk and the SSDF one?"
    # a switch asking a question of its own is searched with it
    history = chat(("what does the AML taxonomy say about sprocket risk", "It names three [1]."),
                   ("which gadgets does the GAI profile tie to it", "Two gadgets [2]."))
    assert "gadgets" in resolve("and the SSDF one?", history, CATALOG).question

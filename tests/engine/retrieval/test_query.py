"""Query stage: normalisation keeps identifiers intact; follow-ups borrow the previous question."""
from nistchat.engine.retrieval.followup import resolve
from nistchat.engine.retrieval.query import identifiers, is_follow_up, normalise, prepare, stated_count

HISTORY = [{"role": "user", "content": "What are the six monitoring categories in AI 800-4?"},
           {"role": "assistant", "content": "Functionality, Operational, ..."}]


def test_normalise_collapses_space_and_unicode_punctuation():
    assert normalise("  What\u2019s  the\tAI\u00a0RMF \u2013 core?\n") == "What's the AI RMF - core?"


def test_function_ids_are_canonicalised_not_broken():
    assert normalise("what does govern1.2 say vs Map 5.1 and MEASURE-2.11?") == \
        "what does GOVERN 1.2 say vs MAP 5.1 and MEASURE 2.11?"


def test_identifiers_found_whole():
    text = "Compare GOVERN 1.2, PW.1.1, PO.1.2.R1, MP-5.1-005 and DP-SGD for GAI"
    assert identifiers(text) == ["GOVERN 1.2", "PW.1.1", "PO.1.2.R1", "MP-5.1-005", "DP-SGD", "GAI"]


def test_identifiers_survive_prepare():
    q = prepare("What is PW.1.1 in SP 800-218A?")
    assert "PW.1.1" in q.search_text and q.search_text == q.text and not q.rewritten


def test_short_follow_up_gets_previous_question():
    r = resolve("and why?", HISTORY)
    assert r.resolved and r.question == "What are the six monitoring categories in AI 800-4? and why?"
    q = prepare("and why?", search_text=r.question, note=r.why)
    assert q.rewritten and q.search_text == r.question and "follow-up" in q.note
    assert q.text == "and why?"  # what the reader sees is unchanged


def test_self_contained_question_is_not_rewritten():
    r = resolve("What does the GenAI profile say about confabulation risks?", HISTORY)
    assert not r.resolved and r.question == "What does the GenAI profile say about confabulation risks?"
    assert not prepare(r.question, search_text=r.question).rewritten


def test_no_history_no_rewrite():
    assert not resolve("and the second one?").resolved
    assert not resolve("and the second one?", []).resolved
    assert not prepare("and the second one?").rewritten


def test_history_ending_with_same_question_is_skipped():
    history = HISTORY + [{"role": "user", "content": "why?"}]
    assert resolve("why?", history).question.startswith("What are the six monitoring categories")


def test_follow_up_detection():
    assert is_follow_up("what about the third?")
    assert is_follow_up("tell me more")
    assert not is_follow_up("What is GOVERN 1.2?")
    assert not is_follow_up("How should organisations monitor deployed AI systems for drift?")


def test_asks_definition_only_for_questions_about_what_an_acronym_means():
    from nistchat.engine.retrieval.query import asks_definition
    for q in ("What does TEVV stand for?", "What is CAISI?", "What do the abbreviations GAI and CBRN refer to?",
              "What does ACE mean here?", "Expand the acronym NSSCET"):
        assert asks_definition(q), q
    for q in ("Does the AI RMF tell my organization what level of risk is acceptable?",
              "What is the purpose of GOVERN 1.2?", "What does the report mean by monitoring?",
              "How should GAI risks be governed?"):
        assert not asks_definition(q), q
    assert prepare("What does TEVV stand for?").asks_definition


def test_question_shape():
    q = prepare("What are the six kinds of post-deployment monitoring?")
    assert q.wants_list and q.count == 6
    assert prepare("List the risks in AI 600-1.").wants_list and prepare("List the risks in AI 600-1.").count is None
    assert not prepare("Why does monitoring matter?").wants_list
    assert stated_count("What does MEASURE 2.11 say in AI 800-4?") is None  # ids and numbers are not counts
    assert stated_count("name the 12 risks") == 12
    assert stated_count("in 2024 there were 3 workshops") == 3
    for name in ("Which SOC 2 Trust Services Criteria apply?", "What does GDPR Article 22 give people?",
                 "Which item of the OWASP Top 10 for LLMs is it?"):
        assert stated_count(name) is None, name  # a number after a mid-sentence name is part of it
    assert stated_count("List 10 risks") == 10

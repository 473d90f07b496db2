"""Small talk (engine/answer/smalltalk/) with the real MiniLM embedder: told apart from NIST questions,
answered at once from the catalogue, stored apart from the answers /metrics counts, and left out
of what a follow-up leans on."""
from __future__ import annotations

import time

import pytest

from nistchat.config import PROJECT_ROOT
from nistchat.engine.answer.smalltalk import KINDS, NIST, load_examples
from nistchat.engine.evaluation import smalltalk as st
from nistchat.models import Message

from tests.conftest import SHORT_ANSWERS
from tests.web_support import build_app, ndjson, stored


@pytest.fixture(scope="module")
def classifier(light_runtime):
    return light_runtime.small_talk


@pytest.mark.parametrize("text,kind", [("hi there!", "greeting"), ("thank you so much!", "thanks"),
                                       ("which documents do you know?", "documents"),
                                       ("wich documents do u know", "documents"),
                                       ("what can you do?", "capabilities"), ("who made you?", "identity"),
                                       ("will it rain today?", "off_topic")])
def test_small_talk_is_recognised_with_its_kind(classifier, text, kind):
    decision = classifier.classify(text)
    assert decision.small_talk and decision.kind == kind, decision


@pytest.mark.parametrize("text", ["what does GOVERN cover?", "and which of them applies across the others?",
                                  "say more about the third one", "hi, what does the AI RMF say about bias?",
                                  "which documents talk about red teaming?", "what does GOVERN 1.2 say",
                                  "my team built a chatbot that invents policy citations, what should we do?"])
def test_nist_questions_and_follow_ups_are_searched(classifier, text):
    assert not classifier.classify(text).small_talk


def test_a_message_taking_a_claim_for_granted_is_searched_however_it_sounds(classifier):
    """Close to the documents examples by its words, yet it asserts something: its premise has
    to be checked against the passages."""
    text = "since your library is complete, do I need any other reading?"
    assert classifier.classify(text).why == "takes a claim for granted" and not classifier.classify(text).small_talk


def test_examples_cover_every_kind_and_the_nist_side():
    labels = {e.label for e in load_examples()}
    assert labels == {*KINDS, NIST}


def test_on_the_dev_split_no_nist_question_is_taken_for_small_talk(classifier):
    """The thresholds were chosen here; the held-out split is reported by `nistchat eval smalltalk`."""
    report = st.measure(classifier, st.load_split("dev", PROJECT_ROOT / "data" / "eval"))
    assert report.questions >= 150 and report.questions_fp == 0 and report.nist_labelled_fp == 0
    assert report.recall >= 0.8


def test_the_pipeline_answers_small_talk_at_once_without_retrieval_or_risk(tiny_runtime):
    tiny_runtime.small_talk.classify("warm")  # embeds the examples once, as the server's first message does
    start = time.perf_counter()
    events = list(tiny_runtime.answer("Which documents do you know?"))
    elapsed = time.perf_counter() - start
    final = events[-1].to_dict()
    assert [e.type for e in events] == ["sources", "token", "final"]
    assert final["small_talk"] == "documents" and not final["refused"] and final["risk"] == ""
    assert "NIST AI 999-9" in final["answer"] and "Critical Infrastructure" in final["answer"]  # from the index
    assert final["sources"] == [] and not final["trace"]["stages"][0]["name"].startswith("retrieve")
    assert elapsed < 2.0  # the benchmark measures it on a quiet machine (scripts/bench_first_run.py)


def test_an_off_topic_question_gets_one_sentence_naming_what_is_covered(tiny_runtime):
    final = list(tiny_runtime.answer("what's the weather like tomorrow?"))[-1].to_dict()
    assert final["refused"] and final["refusal_reason"] == "off_topic" and final["small_talk"] == "off_topic"
    assert final["answer"].count(".") <= 2 and "NIST" in final["answer"]
    assert "Closest sources" not in final["answer"]


def test_a_turn_going_on_from_an_answer_is_searched_not_taken_for_small_talk(tiny_runtime):
    """"and which documents?" after an answer asks for more of what was said."""
    history = [{"role": "user", "content": "what does the sprocket profile cover?"},
               {"role": "assistant", "content": "It covers gadgets [1]."}]
    alone = [s["name"] for s in list(tiny_runtime.answer("and which documents do you know?"))[-1].answer.trace["stages"]]
    searched = tiny_runtime.derived(SHORT_ANSWERS)  # only the stages matter, not the answer
    after = list(searched.answer("and which documents do you know?", history))[-1].answer.trace["stages"]
    assert "small_talk" in alone and "small_talk" not in [s["name"] for s in after]


def test_a_question_leaning_on_an_answer_is_searched_even_when_it_sounds_like_one_about_the_assistant(tiny_runtime):
    """"which documents does it …?" after an answer asks what that answer's subject recommends; a
    question that speaks to the assistant, thanks, and an off-topic one stay small talk."""
    history = [{"role": "user", "content": "what does the sprocket profile cover?"},
               {"role": "assistant", "content": "It covers gadgets [1]."}]
    leaning = "which documents does it tell gadget makers to keep?"
    searched = tiny_runtime.derived(SHORT_ANSWERS)

    def small_talk(question, past):
        stage = next(s for s in list(searched.answer(question, past))[-1].answer.trace["stages"]
                     if s["name"] == "small_talk")
        return stage["items"][0]

    alone = small_talk(leaning, None)
    assert alone["small_talk"] and alone["kind"] == "documents"  # what the classifier takes it for
    after = small_talk(leaning, history)
    assert not after["small_talk"] and "leans on the answer before it" in after["why"]
    for text, kind in [("who made you?", "identity"), ("thanks, that helps", "thanks"),
                       ("will it rain today?", "off_topic")]:
        decision = small_talk(text, history)
        assert decision["small_talk"] and decision["kind"] == kind, (text, decision)


def test_small_talk_can_be_turned_off(tiny_runtime):
    rt = tiny_runtime.derived({"small_talk": {"enabled": False}, **SHORT_ANSWERS})
    assert rt.small_talk is None
    stages = [s["name"] for s in list(rt.answer("hello there"))[-1].answer.trace["stages"]]
    assert "small_talk" not in stages and "refusal_gate" in stages


def test_through_the_api_a_greeting_is_stored_apart_and_skipped_by_follow_ups(tmp_path, light_runtime):
    app = build_app(tmp_path, light_runtime)
    client = app.test_client()
    start = time.perf_counter()
    events = ndjson(client.post("/api/ask", json={"question": "hello!"}).get_data(as_text=True))
    assert time.perf_counter() - start < 2.0
    final = next(e for e in events if e["type"] == "final")
    assert final["small_talk"] == "greeting" and not final["refused"]
    stored_id = next(e for e in events if e["type"] == "stored")["message_id"]
    message = stored(app, Message, stored_id)
    assert message.kind == "small_talk" and message.status == "done" and message.risk is None

    from nistchat.chat.store import engine_history
    from nistchat.extensions import db

    with app.app_context():
        follow = Message(conversation_id=message.conversation_id, owner=message.owner, question="and MAP?")
        db.session.add(follow)
        db.session.commit()
        assert engine_history(follow) == []  # the greeting is not a question to lean on


def test_a_follow_up_after_a_failed_turn_still_knows_the_question(tmp_path, light_runtime):
    """A turn that failed (a timeout, say) keeps its question in the history with an empty answer."""
    from nistchat.chat.store import engine_history
    from nistchat.extensions import db
    from nistchat.models import Conversation

    app = build_app(tmp_path, light_runtime)
    with app.app_context():
        conv = Conversation(owner="o", title="t")
        db.session.add(conv)
        db.session.flush()
        failed = Message(conversation_id=conv.id, owner="o", question="what are the AI RMF functions?",
                         status="error", error_kind="timeout", answer="partial words")
        follow = Message(conversation_id=conv.id, owner="o", question="and which of them applies across the others?")
        db.session.add_all([failed, follow])
        db.session.commit()
        assert engine_history(follow) == [{"role": "user", "content": "what are the AI RMF functions?"},
                                          {"role": "assistant", "content": "", "sources": [], "refused": False}]

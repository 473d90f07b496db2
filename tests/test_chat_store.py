"""chat/store.py inside a real request context on a real migrated SQLite file and PostgreSQL
database: how a question is recorded for each topic mode, who may see a conversation, the history
handed to the engine, and the one final write of an answer (success and failure)."""
from __future__ import annotations

import pytest
from flask import session
from werkzeug.exceptions import NotFound

from nistchat.chat import store
from nistchat.chat.store import Outcome
from nistchat.engine import Answer, Failure, Source, Verdict
from nistchat.extensions import db
from nistchat.models import Conversation, Message, Timing
from nistchat.topics.questions import Topic

pytestmark = pytest.mark.both_engines  # every test using the database runs on SQLite and PostgreSQL


def test_the_first_question_opens_a_conversation_and_later_ones_join_it(app):
    with app.test_request_context("/"):
        first = store.start_message("What is the GOVERN function? " + "x" * 300, None)
        conv = db.session.get(Conversation, session["conversation"])
        assert first.conversation_id == conv.id and first.status == "pending" and first.attempts == 0
        assert conv.owner == session["owner"] == first.owner and len(conv.title) == 200
        assert first.prompt == first.question and first.label is None and first.direct_answer is None
        second = store.start_message("And MAP?", None)
        assert second.conversation_id == conv.id and conv.updated_at >= conv.created_at
        assert [m.id for m in conv.messages] == [first.id, second.id]


def test_each_topic_mode_records_what_the_page_shows_and_the_engine_gets(app):
    with app.test_request_context("/"):
        plain = store.start_message("Plain?", Topic("Plain?", "plain"))
        prompt = store.start_message("Label", Topic("Label", "prompt", prompt="Full prompt"))
        answer = store.start_message("Canned", Topic("Canned", "answer", answer="Verbatim", prompt="unused"))
        assert (plain.label, plain.prompt, plain.direct_answer) == (None, "Plain?", None)
        assert (prompt.label, prompt.prompt, prompt.direct_answer) == ("Label", "Full prompt", None)
        assert (answer.label, answer.prompt, answer.direct_answer) == ("Canned", "Canned", "Verbatim")
        assert db.session.get(Conversation, plain.conversation_id).title == "Plain?"


def test_a_conversation_is_visible_to_its_owner_and_admins_only(app):
    with app.test_request_context("/"):
        conv_id = store.start_message("Mine", None).conversation_id
        owner = session["owner"]
        assert store.visible_conversation(conv_id).id == conv_id
        assert store.visible_conversation(None) is None and store.visible_conversation("") is None
    with app.test_request_context("/"):
        session["owner"] = "someone-else"
        with pytest.raises(NotFound):
            store.visible_conversation(conv_id)
        with pytest.raises(NotFound):
            store.visible_conversation("no-such-id")
        from nistchat.auth import start_admin_session
        start_admin_session()  # an admin session held on the server, as a login makes
        assert store.visible_conversation(conv_id).owner == owner


def test_a_remembered_conversation_of_another_owner_is_forgotten(app):
    with app.test_request_context("/"):
        conv_id = store.start_message("Mine", None).conversation_id
    with app.test_request_context("/"):
        session["owner"], session["conversation"] = "someone-else", conv_id
        assert store.current_conversation() is None and "conversation" not in session
        fresh = store.start_message("Theirs", None)  # starts their own conversation
        assert fresh.conversation_id != conv_id and session["conversation"] == fresh.conversation_id
        session["conversation"] = "deleted-id"
        assert store.current_conversation() is None and "conversation" not in session


SOURCE = Source(1, "NIST.AI.100-1:p12", "NIST.AI.100-1", "AI RMF", "GOVERN", 21, "prose", 0.5, True,
                text="GOVERN cultivates a culture of risk management.")


def test_engine_history_has_earlier_finished_turns_of_this_conversation_oldest_first(app, monkeypatch):
    monkeypatch.setattr(store, "HISTORY_TURNS", 2)
    with app.test_request_context("/"):
        ids = []
        for i in range(4):
            message = store.start_message(f"q{i}", Topic(f"q{i}", "prompt", prompt=f"prompt {i}") if i == 3 else None)
            ids.append(message.id)
        for i, mid in enumerate(ids[:3]):
            if i != 1:  # q1 failed: not part of the history
                store.finish_message(mid, Outcome(Answer(f"a{i}", sources=[SOURCE] if i == 2 else [])))
            else:
                store.finish_message(mid, Outcome(failure=Failure("unreachable", "boom")))
        store.finish_message(ids[3], Outcome(Answer("a3")))
        session.pop("conversation")
        other = store.start_message("elsewhere", None)
        store.finish_message(other.id, Outcome(Answer("other")))
        later = store.start_message("q4", None, conversation=db.session.get(Conversation, message.conversation_id))
        assert store.engine_history(later) == [  # the last two done turns, the prompt rather than the label,
            # each answer with the passages it was given (a follow-up can lean on them)
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "a2", "sources": [SOURCE.to_dict()], "refused": False},
            {"role": "user", "content": "prompt 3"},
            {"role": "assistant", "content": "a3", "sources": [], "refused": False}]
        assert store.engine_history(db.session.get(Message, ids[0])) == []


def test_finishing_an_answer_writes_the_outcome_and_its_timings_at_once(app):
    with app.test_request_context("/"):
        mid = store.start_message("q", None).id
        source = Source(1, "p1", "NIST.AI.100-1", "AI RMF", "Core", None, "prose", 0.5, True, text="The answer.")
        final = Answer("The answer.", risk="LOW", sentences=[Verdict("The answer.", True, 1)], sources=[source],
                       backend={"reader": "embedded:qwen"}, queue_ms=7,
                       timings_ms={"retrieve": 12, "generate": 340.5, "note": "not a number",
                                   "a_stage_name_longer_than_thirty_two_chars": 1})
        store.finish_message(mid, Outcome(final, wall_ms=400.0, retry_reason="too short"))
        db.session.expire_all()
        message = db.session.get(Message, mid)
        assert (message.status, message.answer, message.risk, message.incomplete) == ("done", "The answer.", "LOW", False)
        assert message.disclaimer is None and message.retried and message.retry_reason == "too short"
        assert message.verdicts == [{"text": "The answer.", "supported": True, "passage": 1}]
        assert message.sources == [source.to_dict()]
        assert message.backend == {"reader": "embedded:qwen"} and message.total_ms == 400.0
        assert message.finished_at is not None
        assert message.timings_ms == {"retrieve": 12.0, "generate": 340.5, "wall": 400.0, "queue": 7.0,
                                      "a_stage_name_longer_than_thirty_": 1.0}
        assert db.session.query(Timing).count() == 5


def test_a_failed_answer_is_stored_incomplete_with_its_partial_text_and_error(app):
    with app.test_request_context("/"):
        mid = store.start_message("q", None).id
        store.finish_message(mid, Outcome(failure=Failure("timeout", "The reader stopped.", "Half an ans"),
                                          partial="ignored", sources=[{"rank": 1}], risk="HIGH"))
        db.session.expire_all()
        message = db.session.get(Message, mid)
        assert (message.status, message.error_kind, message.error) == ("error", "timeout", "The reader stopped.")
        assert message.incomplete and message.answer == "Half an ans" and message.sources == [{"rank": 1}]
        assert message.risk == "HIGH" and message.verdicts == [] and message.timings == []

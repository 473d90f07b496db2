"""history/search.py on a real migrated SQLite file (FTS5 kept in sync by migration 0002's
triggers) and on a real PostgreSQL database (0007's generated tsvector column): the safe prefix
query, scoping to one owner, highlight sentinels, paging, the index following edits and deletes,
and the conversation listing with message counts. Every test that uses `app` runs on both."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from nistchat.database import PostgresDatabase, SQLiteDatabase
from nistchat.extensions import db
from nistchat.history import search
from nistchat.models import Conversation, Message
from nistchat.web import HIGHLIGHT_END as E
from nistchat.web import HIGHLIGHT_START as S

pytestmark = pytest.mark.both_engines


def add(owner: str, question: str, answer: str = "", *, label: str | None = None, conv: Conversation | None = None,
        when: datetime | None = None) -> Message:
    conv = conv or Conversation(owner=owner, title=label or question, updated_at=when or datetime(2026, 1, 1))
    message = Message(conversation=conv, owner=owner, question=question, label=label, answer=answer, status="done")
    db.session.add_all([conv, message])
    db.session.commit()
    return message


@pytest.mark.parametrize("typed, fts5, tsquery", [
    ("docu", '"docu"*', "'docu':*"),
    ("risk management", '"risk"* "management"*', "'risk':* & 'management':*"),
    ('"unbalanced NEAR(a b) OR -x *', '"unbalanced"* "NEAR"* "a"* "b"* "OR"* "x"*',  # operators become words
     "'unbalanced':* & 'NEAR':* & 'a':* & 'b':* & 'OR':* & 'x':*"),
    ("<script>", '"script"*', "'script':*"),
    ("it's a:b|c & !d", '"it"* "s"* "a"* "b"* "c"* "d"*', "'it':* & 's':* & 'a':* & 'b':* & 'c':* & 'd':*"),
    ("Künstliche Intelligenz", '"Künstliche"* "Intelligenz"*', "'Künstliche':* & 'Intelligenz':*"),
    ("  ", "", ""), ("*-:()", "", ""), (None, "", ""),
])
def test_typed_text_becomes_quoted_prefix_terms_on_each_engine(typed, fts5, tsquery):
    terms = search.search_terms(typed)
    assert SQLiteDatabase.fts_query(terms) == fts5 and PostgresDatabase.tsquery(terms) == tsquery


def test_at_most_twelve_terms_are_used():
    assert len(search.search_terms(" ".join(f"w{i}" for i in range(20)))) == search.MAX_TERMS == 12


@pytest.mark.parametrize("typed", ['"', "'", "\\", "a'b", "x:*", "(", "!", "<->", "NEAR(", "^", "\x00", "_", "٣"])
def test_hostile_text_is_a_search_not_an_error(app, typed):
    with app.app_context():
        add("alice", "plain question", "plain answer")
        hits, total = search.search(typed + " plain", "alice", 1, 10)
        assert total == len(hits)


def test_search_is_scoped_to_one_owner_and_admins_see_all(app):
    with app.app_context():
        mine = add("alice", "What is adversarial machine learning?", "Attacks on models.")
        theirs = add("bob", "Adversarial examples?", "Perturbed inputs.")
        hits, total = search.search("adversarial", "alice", 1, 10)
        assert total == 1 and [h.message_id for h in hits] == [mine.id]
        assert hits[0].conversation_id == mine.conversation_id and isinstance(hits[0].created_at, datetime)
        hits, total = search.search("adversarial", None, 1, 10)
        assert total == 2 and [h.message_id for h in hits] == [theirs.id, mine.id]  # newest first
        assert search.search("adversarial", "carol", 1, 10) == ([], 0)


def test_prefixes_match_while_typing_and_stems_match_forms(app):
    with app.app_context():
        add("alice", "Which documents can I ask about?", "Seven NIST publications.")
        assert search.search("docu", "alice", 1, 10)[1] == 1
        assert search.search("publication", "alice", 1, 10)[1] == 1  # porter stemming: publications
        assert search.search("documents zebra", "alice", 1, 10)[1] == 0  # every term must match
        assert search.search("?!", "alice", 1, 10) == ([], 0)  # nothing searchable: no query at all


def test_matches_are_wrapped_in_the_highlight_sentinels(app):
    with app.app_context():
        add("alice", "What does GOVERN cover?", "GOVERN cultivates a culture of risk management. " * 3)
        (hit,), _ = search.search("govern", "alice", 1, 10)
        assert hit.question == f"What does {S}GOVERN{E} cover?"
        assert f"{S}GOVERN{E} cultivates" in hit.answer and hit.answer.count(S) == hit.answer.count(E) == 3
        (hit,), _ = search.search("cultiv", "alice", 1, 10)
        assert S not in hit.question and hit.question == "What does GOVERN cover?"
        assert f"{S}cultivates{E}" in hit.answer


def test_the_index_follows_answer_updates_and_deletes(app):
    with app.app_context():
        message = add("alice", "A question", "pending text")
        message.answer = "final wording about confabulation"
        db.session.commit()
        assert search.search("pending", "alice", 1, 10)[1] == 0
        assert search.search("confabulation", "alice", 1, 10)[1] == 1
        db.session.delete(message.conversation)  # cascades to its messages
        db.session.commit()
        assert search.search("confabulation", "alice", 1, 10)[1] == 0


def test_search_pages_count_every_hit(app):
    with app.app_context():
        ids = [add("alice", f"risk question {i}").id for i in range(5)]
        first, total = search.search("risk", "alice", 1, 2)
        last, _ = search.search("risk", "alice", 3, 2)
        assert total == 5 and [h.message_id for h in first] == [ids[4], ids[3]]
        assert [h.message_id for h in last] == [ids[0]]
        assert search.search("risk", "alice", 4, 2) == ([], 5)


def test_conversations_are_listed_newest_first_with_their_message_counts(app):
    with app.app_context():
        day = datetime(2026, 3, 1)
        old = add("alice", "old", when=day)
        add("alice", "old again", conv=old.conversation)
        new = add("alice", "new", when=day + timedelta(days=1))
        empty = Conversation(owner="alice", title="empty", updated_at=day - timedelta(days=1))
        db.session.add(empty)
        add("bob", "bob's", when=day + timedelta(days=2))
        db.session.commit()
        rows, total = search.conversations("alice", 1, 10)
        assert total == 3
        assert [(r.id, r.messages, r.owner) for r in rows] == [(new.conversation_id, 1, "alice"),
                                                               (old.conversation_id, 2, "alice"), (empty.id, 0, "alice")]
        rows, total = search.conversations(None, 1, 2)
        assert total == 4 and [r.title for r in rows] == ["bob's", "new"]
        assert [r.title for r in search.conversations("alice", 2, 2)[0]] == ["empty"]

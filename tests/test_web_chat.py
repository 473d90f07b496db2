"""Chat page, POST /ask (htmx and plain), the SSE stream, topics, and clear errors."""
from __future__ import annotations

import json
import re

import pytest

from nistchat.models import Conversation, Message
from nistchat.web import STATIC_DIR, retry_note

from .web_support import (DIRECT_LABEL, HX, count, ndjson, stored, ask_and_stream, build_app, csrf_token, login, message_id, post,
                          sse_events)

pytestmark = pytest.mark.both_engines  # every test using the database runs on SQLite and PostgreSQL

SEVEN = ["AI 100-1", "AI 600-1", "AI 100-2e2023", "SP 800-218A", "AI 800-4", "AI 100-5", "Critical infrastructure"]


def test_chat_page_shows_question_box_and_topics_for_all_seven_documents(client):
    html = client.get("/").get_data(as_text=True)
    assert 'name="question"' in html and 'hx-post="/ask"' in html
    for doc in SEVEN:
        assert doc in html, doc
    # all three entry modes are offered
    assert 'data-mode="plain"' in html and 'data-mode="prompt"' in html and 'data-mode="answer"' in html
    assert "/static/vendor/htmx.min.js" in html  # offline copy by default, no CDN
    assert "cdn.jsdelivr" not in html


def test_session_cookie_is_httponly_and_samesite(client):
    response = client.get("/")
    cookie = response.headers.get("Set-Cookie", "")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_empty_question_is_rejected_with_a_reason(client):
    response = post(client, "/ask", {"question": "   "}, htmx=True)
    assert response.status_code == 422
    assert "type a question" in response.get_data(as_text=True)
    plain = post(client, "/ask", {"question": ""})
    assert plain.status_code == 422 and "type a question" in plain.get_data(as_text=True)
    assert count(client, Message) == 0


def test_100kb_question_is_rejected_before_any_model(client):
    response = post(client, "/ask", {"question": "x" * 100_000}, htmx=True)
    assert response.status_code == 422
    assert "100,000 characters" in response.get_data(as_text=True)
    assert count(client, Message) == 0


def test_missing_csrf_token_is_refused(client):
    client.get("/")
    response = client.post("/ask", data={"question": "What is the AI RMF?"}, headers=HX)
    assert response.status_code == 400
    assert "security token" in response.get_data(as_text=True)
    assert count(client, Message) == 0


def test_direct_answer_topic_streams_the_configured_answer_verbatim(client):
    mid, events = ask_and_stream(client, DIRECT_LABEL, topic=True)
    names = [name for name, _ in events]
    assert names[0] == "sources" and "token" in names and names[-2:] == ["final", "done"]
    final = dict(events)["final"]
    assert "NIST AI 800-4" in final and "Secure Software Development Practices" in final
    assert "saved answer" in final
    message = stored(client, Message, mid)
    assert message.status == "done" and message.direct_answer and message.answer == message.direct_answer
    assert message.sources == []  # no retrieval
    assert message.label == DIRECT_LABEL


def test_turn_partial_connects_to_the_stream_and_shows_the_question_at_once(client):
    response = post(client, "/ask", {"question": DIRECT_LABEL, "topic": "1"}, htmx=True)
    html = response.get_data(as_text=True)
    mid = message_id(html)
    assert f'sse-connect="/ask/stream/{mid}"' in html and 'sse-close="done"' in html
    assert DIRECT_LABEL.replace("?", "") in html
    assert 'class="progress"' in html


def test_plain_submit_without_javascript_renders_the_answer_on_the_page(client):
    response = post(client, "/ask", {"question": DIRECT_LABEL, "topic": "1"})
    assert response.status_code == 302 and "#msg-" in response.headers["Location"]
    html = client.get("/").get_data(as_text=True)
    assert "Questions outside these documents are declined" in html


def test_conversation_continues_and_new_chat_starts_fresh(client):
    first, _ = ask_and_stream(client, DIRECT_LABEL, topic=True)
    second, _ = ask_and_stream(client, "How do I read the support marks?", topic=True)
    a, b = stored(client, Message, first), stored(client, Message, second)
    assert a.conversation_id == b.conversation_id
    assert post(client, "/new").status_code == 302
    third, _ = ask_and_stream(client, DIRECT_LABEL, topic=True)
    assert stored(client, Message, third).conversation_id != a.conversation_id


def test_unknown_conversation_and_message_ids_are_404(client):
    assert client.get("/c/does-not-exist").status_code == 404
    assert client.get("/ask/stream/987654").status_code == 404


def test_another_browsers_conversation_is_not_visible(app):
    alice, bob = app.test_client(), app.test_client()
    mid, _ = ask_and_stream(alice, DIRECT_LABEL, topic=True)
    conv = stored(app, Message, mid).conversation_id
    assert alice.get(f"/c/{conv}").status_code == 200
    assert bob.get(f"/c/{conv}").status_code == 404
    assert bob.get(f"/ask/stream/{mid}").status_code == 404
    login(bob)
    assert bob.get(f"/c/{conv}").status_code == 200  # admins see everyone's


def test_an_admin_asking_from_a_users_conversation_starts_one_of_their_own(app):
    user, admin = app.test_client(), app.test_client()
    mid, _ = ask_and_stream(user, DIRECT_LABEL, topic=True)
    theirs = stored(app, Message, mid).conversation_id
    login(admin)
    page = admin.get(f"/c/{theirs}").get_data(as_text=True)
    assert 'id="not-yours"' in page
    asked, _ = ask_and_stream(admin, DIRECT_LABEL, topic=True)
    mine = stored(app, Message, asked).conversation_id
    assert mine != theirs and stored(app, Conversation, mine).owner != stored(app, Conversation, theirs).owner
    via_api = admin.post("/api/ask", json={"question": DIRECT_LABEL, "topic": True, "conversation_id": theirs})
    accepted = ndjson(via_api.get_data(as_text=True))[0]
    assert accepted["conversation_id"] != theirs
    with app.app_context():
        assert Message.query.filter_by(conversation_id=theirs).count() == 1  # the user's is unchanged
    assert 'id="not-yours"' not in user.get(f"/c/{theirs}").get_data(as_text=True)


def test_reconnecting_stream_replays_the_answer(client):
    from nistchat.chat.runs import RunRegistry

    mid, first = ask_and_stream(client, DIRECT_LABEL, topic=True)
    replay = sse_events(client.get(f"/ask/stream/{mid}").get_data(as_text=True))
    assert [n for n, _ in replay] == [n for n, _ in first]  # a reconnect sees the whole run again
    client.application.extensions["nistchat_runs"] = RunRegistry()  # as after a server restart
    stored_only = sse_events(client.get(f"/ask/stream/{mid}").get_data(as_text=True))
    assert [n for n, _ in stored_only] == ["final", "done"]
    assert "NIST AI 600-1" in stored_only[0][1]


def test_model_text_is_escaped(client):
    """A configured answer with markup is shown as text, never as HTML (same path as model output)."""
    login(client)
    editor = client.get("/admin/questions").get_data(as_text=True)
    base_sha = re.search(r'name="base_sha" value="([0-9a-f]+)"', editor).group(1)
    config = {"categories": [{"name": "T", "emoji": "x", "questions": [
        {"label": "<b>bold</b> label", "answer": "<script>alert(1)</script> & more"}]}]}
    saved = post(client, "/admin/questions", {"raw_json": json.dumps(config), "base_sha": base_sha},
                 token_from="/admin/questions")
    assert saved.status_code == 200, saved.get_data(as_text=True)[:400]
    page = client.get("/").get_data(as_text=True)
    assert "&lt;b&gt;bold&lt;/b&gt; label" in page and "<b>bold</b> label" not in page
    _, events = ask_and_stream(client, "<b>bold</b> label", topic=True)
    streamed = "".join(data for _, data in events)
    assert "<script>alert(1)</script>" not in streamed
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in streamed


def test_missing_index_is_a_clear_message_not_a_stack_trace(tmp_path):
    from nistchat.engine.runtime import Runtime

    from .conftest import make_settings
    broken = Runtime(make_settings(tmp_path, data_dir=tmp_path / "no-data"))
    app = build_app(tmp_path, broken)
    client = app.test_client()
    mid, events = ask_and_stream(client, "What are the four functions of the AI RMF Core?")
    problem = dict(events).get("problem", "") + dict(events)["final"]
    assert "nistchat ingest" in problem
    assert "Traceback" not in problem
    message = stored(client, Message, mid)
    assert message.status == "error" and message.error_kind and "nistchat ingest" in message.error


def test_ask_is_rate_limited_per_client(tmp_path, light_runtime):
    app = build_app(tmp_path, light_runtime, settings={"ask_rate_limit": "2 per minute"})
    client = app.test_client()
    token = csrf_token(client)
    codes = [client.post("/ask", data={"question": DIRECT_LABEL, "topic": "1", "csrf_token": token},
                         headers=HX).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    api = client.post("/api/ask", json={"question": DIRECT_LABEL, "topic": True})
    assert api.status_code == 429  # the API shares the page's budget, it is not a second one


def test_topics_panel_partial(client):
    html = client.get("/topics").get_data(as_text=True)
    assert "<html" not in html and DIRECT_LABEL in html


def test_cdn_mode_pins_htmx_with_subresource_integrity(tmp_path, light_runtime):
    pins = json.loads((STATIC_DIR / "htmx-pins.json").read_text())
    app = build_app(tmp_path, light_runtime, settings={"htmx": "cdn"})
    html = app.test_client().get("/").get_data(as_text=True)
    for pin in pins.values():
        assert f'src="{pin["cdn"]}" integrity="{pin["integrity"]}" crossorigin="anonymous"' in html
        assert pin["version"] in pin["cdn"] and pin["integrity"].startswith("sha384-")
    assert "/static/vendor/" not in html


def test_vendored_htmx_matches_the_pinned_hash():
    """scripts/fetch_htmx.py put the npm package's bytes here; they must be the pinned ones."""
    import base64
    import hashlib

    pins = json.loads((STATIC_DIR / "htmx-pins.json").read_text())
    for pin in pins.values():
        data = (STATIC_DIR / "vendor" / pin["local"]).read_bytes()
        assert "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode() == pin["integrity"]


def test_a_pending_answer_resumes_after_a_server_restart(client):
    """A question stored as pending whose run was lost (server restarted before it finished)
    reconnects from the page, and its stream runs the answer again."""
    from nistchat.chat.runs import RunRegistry
    from nistchat.extensions import db
    from nistchat.models import Conversation

    client.get("/")
    with client.session_transaction() as session:
        owner = session["owner"]
    app = client.application
    with app.app_context():
        conv = Conversation(owner=owner, title=DIRECT_LABEL)
        db.session.add(conv)
        db.session.flush()
        message = Message(conversation_id=conv.id, owner=owner, question=DIRECT_LABEL, label=DIRECT_LABEL,
                          prompt=DIRECT_LABEL, direct_answer="Saved answer text.")
        db.session.add(message)
        db.session.commit()
        conv_id, mid = conv.id, message.id
    app.extensions["nistchat_runs"] = RunRegistry()  # nothing running: as after a restart
    page = client.get(f"/c/{conv_id}").get_data(as_text=True)
    assert f'sse-connect="/ask/stream/{mid}"' in page and "Still answering" in page
    events = sse_events(client.get(f"/ask/stream/{mid}").get_data(as_text=True))
    assert "Saved answer text." in dict(events)["final"]
    assert stored(client, Message, mid).status == "done"


def test_an_answer_that_cannot_be_saved_says_so_and_does_not_reconnect(client, monkeypatch):
    from nistchat.chat import runs

    def broken_store(*_args, **_kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(runs, "finish_message", broken_store)
    mid, events = ask_and_stream(client, DIRECT_LABEL, topic=True)
    final = dict(events)["final"]
    assert "could not be saved" in final
    assert "sse-connect" not in final  # a reconnect would replay the same ending in a loop
    assert stored(client, Message, mid).status == "pending"


def test_sse_frames_never_carry_a_carriage_return():
    """EventSource splits lines at CR as well as LF: a CR inside a data line would lose text."""
    from nistchat.chat.stream import frame

    text = frame("token", "line one\r\nline two\rline three")
    assert "\r" not in text
    assert sse_events(text) == [("token", "line one\nline two\nline three")]


def test_answers_finishing_at_once_are_all_stored(app):
    """WAL + busy_timeout: concurrent final writes wait for each other instead of failing."""
    import threading

    from nistchat.chat.store import Outcome, finish_message
    from nistchat.engine import Answer
    from nistchat.extensions import db
    from nistchat.models import Conversation

    with app.app_context():
        conv = Conversation(owner="o", title="t")
        db.session.add(conv)
        db.session.flush()
        rows = [Message(conversation_id=conv.id, owner="o", question=f"q{i}") for i in range(8)]
        db.session.add_all(rows)
        db.session.commit()
        ids = [m.id for m in rows]
    start, failures = threading.Barrier(len(ids)), []

    def finish(mid):
        with app.app_context():
            start.wait()
            try:
                finish_message(mid, Outcome(Answer(f"answer {mid}", timings_ms={"generate": 1.0}), wall_ms=5.0))
            except Exception as exc:  # noqa: BLE001 - recorded for the assertion
                failures.append(exc)
            finally:
                db.session.remove()

    threads = [threading.Thread(target=finish, args=(mid,)) for mid in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    for mid in ids:
        row = stored(app, Message, mid)
        assert row.status == "done" and row.answer == f"answer {mid}"


def test_document_chips_come_from_the_index_and_the_choice_is_stored_and_shown(tmp_path, tiny_runtime):
    """The tiny index holds a made-up eighth document no code knows: it gets a chip all the same."""
    client = build_app(tmp_path, tiny_runtime).test_client()
    html = client.get("/").get_data(as_text=True)
    assert 'name="docs" value="NIST.AI.999-9"' in html and "NIST AI 999-9, Guidance on Widget Assurance" in html
    assert 'value="NIST.AI.CI-Profile-Concept-Note"' in html
    bad = post(client, "/ask", {"question": "q", "docs": "NIST.AI.404"}, htmx=True)
    assert bad.status_code == 422 and "The documents: Guidance on Widget Assurance (NIST AI 999-9)" in bad.get_data(as_text=True)
    response = post(client, "/ask", {"question": DIRECT_LABEL, "topic": "1", "docs": "NIST.AI.999-9"}, htmx=True)
    mid = message_id(response.get_data(as_text=True))
    client.get(f"/ask/stream/{mid}")
    assert stored(client, Message, mid).docs == ["NIST.AI.999-9"]
    assert "searched only: Guidance on Widget Assurance (NIST AI 999-9)" in client.get("/").get_data(as_text=True)
    record = json.loads(client.get("/logs.jsonl").get_data(as_text=True).splitlines()[0])
    assert record["docs"] == ["NIST.AI.999-9"] and record["kind"] == "chat"
    api = client.post("/api/ask", json={"question": "q", "docs": ["NIST.AI.404"]})
    assert api.status_code == 400 and "NIST.AI.CI-Profile-Concept-Note" in api.get_json()["message"]
    assert client.post("/api/ask", json={"question": "q", "docs": "NIST.AI.999-9"}).status_code == 400


def test_while_the_reader_reads_the_passages_the_page_says_so_with_a_bar_of_the_expected_time(app):
    from flask import render_template

    with app.test_request_context("/"):
        measured = render_template("chat/_queue.html", ahead=0,
                                   prefill={"prompt_tokens": 1900, "expected_s": 47.5, "limit_s": 142.5})
        unmeasured = render_template("chat/_queue.html", ahead=0,
                                     prefill={"prompt_tokens": 1900, "expected_s": None, "limit_s": 900})
        waiting = render_template("chat/_queue.html", ahead=2, prefill=None)
    assert "Reading the passages (1900 tokens, about 48 s on this machine)" in measured
    assert 'style="--estimate: 47.5s"' in measured
    assert "Reading the passages (1900 tokens)" in unmeasured and "progressbar" not in unmeasured
    assert "2 answers ahead of yours" in waiting


def test_a_resolved_follow_up_shows_what_was_searched_for_live_and_once_stored(client):
    """The engine's resolved question ("Searched for: …") is on the streamed sources and on the
    stored message, so a person sees what was understood and can rephrase; a question searched as
    asked shows none."""
    from flask import render_template

    from nistchat.chat import store
    from nistchat.engine import Answer, Source

    source = {"rank": 1, "id": "p1", "doc": "NIST.AI.600-1", "title": "GenAI Profile", "section": "Risks",
              "page": 4, "kind": "prose", "text": "Confabulation is false content.", "score": 0.5, "cited": False}
    from flask import session

    app = client.application
    with client.session_transaction() as cookie:
        cookie["owner"] = "reader-of-follow-ups"
    with app.test_request_context("/"):
        session["owner"] = "reader-of-follow-ups"
        live = render_template("chat/_sources.html", sources=[source], mid=1, searched_for="the <2nd> risk, confabulation")
        plain = render_template("chat/_sources.html", sources=[source], mid=1, searched_for="")
        first = store.start_message("which risks does the GAI profile list?", None)
        cited = Source(1, "p1", "NIST.AI.600-1", "GenAI Profile", "Risks", 4, "prose", 0.5, False,
                       text="Confabulation is false content.")
        store.finish_message(first.id, store.Outcome(Answer("CBRN; confabulation.", sources=[cited])))
        follow = store.start_message("what does the second one mean?", None)
        store.finish_message(follow.id, store.Outcome(Answer("False content.", sources=[cited],
                                                             searched_for="what does confabulation mean?")))
        conv_id = follow.conversation_id
    assert "Searched for: <q>the &lt;2nd&gt; risk, confabulation</q>" in live and "Searched for" not in plain
    page = client.get(f"/c/{conv_id}").get_data(as_text=True)
    assert page.count("Searched for:") == 1 and "Searched for: <q>what does confabulation mean?</q>" in page


def test_a_retry_that_did_no_better_is_not_called_a_rewrite_under_the_stored_answer(client):
    """The first draft kept after its retry lost is shown as the first draft; an answer stored
    before the column (NULL) keeps the old note."""
    from flask import session

    from nistchat.chat import store
    from nistchat.engine import Answer
    from nistchat.engine.types import Verdict
    from nistchat.extensions import db

    with client.session_transaction() as cookie:
        cookie["owner"] = "reader-of-retries"
    draft = Answer("Gadgets are oiled weekly.", retried=True, chosen_attempt=1,
                   sentences=[Verdict("Gadgets are oiled weekly.", False, None)])
    rewrite = Answer("Sprockets are audited.", retried=True, chosen_attempt=2,
                     sentences=[Verdict("Sprockets are audited.", True, 1)])
    unsupported = "1 of 1 sentences were not supported by the passages"
    with client.application.test_request_context("/"):
        session["owner"] = "reader-of-retries"
        first = store.start_message("how often are gadgets oiled?", None)
        store.finish_message(first.id, store.Outcome(draft, retry_reason=unsupported))
        second = store.start_message("and sprockets?", None, conversation=first.conversation)
        store.finish_message(second.id, store.Outcome(rewrite, retry_reason=unsupported))
        conv_id = first.conversation_id
        assert [db.session.get(Message, m).retry_kept for m in (first.id, second.id)] == [False, True]
        old = store.start_message("an answer stored before retry_kept", None, conversation=first.conversation)
        store.finish_message(old.id, store.Outcome(rewrite, retry_reason=unsupported))
        db.session.get(Message, old.id).retry_kept = None
        db.session.commit()
    page = client.get(f"/c/{conv_id}").get_data(as_text=True)
    assert page.count("did no better, so the first draft is shown") == 1
    assert page.count("so this answer was rewritten from exact source sentences") == 2


def test_a_rewritten_answer_says_why_it_was_rewritten(client):
    """The list retry, the quote retry and the citation-forced one are told apart, live and under the stored answer."""
    from flask import render_template

    from nistchat.engine import COPY_RETRY, DECLINED_RETRY, DENIED_RETRY, LIST_RETRY, POLAR_RETRY, PREMISE_RETRY

    unsupported = "3 of 4 sentences were not supported by the passages"
    with client.application.test_request_context():
        listed = render_template("chat/_retry.html", reason=LIST_RETRY, mid=1)
        cited = render_template("chat/_retry.html", reason=unsupported, mid=1)
    assert "only counted the items" in listed and "exact source sentences" not in listed
    assert f"exact source sentences ({unsupported})." in cited
    assert "only counted the items, so this answer was rewritten" in retry_note(LIST_RETRY, stored=True)
    assert "rewritten from exact source sentences" in retry_note(unsupported, stored=True)
    assert "only said yes, so this answer was rewritten to quote" in retry_note(POLAR_RETRY, stored=True)
    assert "only said yes, so the answer is being rewritten" in retry_note(POLAR_RETRY)
    assert "said yes where the source says no, so this answer was rewritten to quote it" in retry_note(
        DENIED_RETRY, stored=True)
    assert "said yes where the source says no, so the answer is being rewritten" in retry_note(DENIED_RETRY)
    assert "agreed with what the question assumes, which the source contradicts, so this answer is" in retry_note(
        PREMISE_RETRY, stored=True)
    assert "so the answer is being replaced by that source's sentence" in retry_note(PREMISE_RETRY)
    assert "gave it back as it was, so this answer is its first sentence" in retry_note(COPY_RETRY, stored=True)
    assert "so the answer is being replaced by its first sentence" in retry_note(COPY_RETRY)
    assert "found no answer, so this answer is the source's sentence that contradicts" in retry_note(
        DECLINED_RETRY, stored=True)
    assert "found no answer, so the answer is the source's sentence" in retry_note(DECLINED_RETRY)

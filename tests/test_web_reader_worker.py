"""The site survives its reader: a live waitress server on loopback, a real worker process on the
0.5B weights, SIGKILL while an answer streams. Also the queue caps, the start-up self-test on the
page, and a pending message resumed at most once."""
from __future__ import annotations

import os
import signal
import threading

import pytest

from nistchat.config import GGUF_MODELS
from nistchat.engine.runtime import Runtime
from nistchat.models import Message

from .conftest import MODELS_DIR, SHORT_ANSWERS, make_settings
from .web_support import admin_status, ask, build_app, login, served, stored, wait_for

QUESTION = "What are the four functions of the AI RMF Core?"
pytestmark = pytest.mark.skipif(not (MODELS_DIR / GGUF_MODELS["qwen2.5-coder-0.5b"]).exists(),
                                reason="0.5B reader not installed (make test installs it)")


@pytest.fixture
def live(runtime, tmp_path):
    """A served app with an engine of its own (its own worker process) over the session's index,
    answering briefly: these tests are about the reader's process and queue."""
    own = Runtime(make_settings(**SHORT_ANSWERS))
    app = build_app(tmp_path, own)
    with served(app) as client:
        yield client, app, own
    worker = own.models.worker()
    if worker:
        worker.stop()


def test_killing_the_reader_mid_answer_costs_one_answer_not_the_site(live):
    client, app, runtime = live
    runtime.models.self_test()
    worker = runtime.models.worker()
    killed = []

    def kill_once(_event):
        if not killed:
            killed.append(worker.pid)
            os.kill(worker.pid, signal.SIGKILL)

    events = ask(client, QUESTION, on_token=kill_once)
    assert killed, [e["type"] for e in events]
    error = next(e for e in events if e["type"] == "error")
    assert error["kind"] == "interrupted" and "killed by SIGKILL" in error["message"]
    assert error["partial"].strip() and error["incomplete"] is True
    assert events[-1]["type"] == "stored"
    row = stored(app, Message, events[0]["message_id"])
    assert row.status == "error" and row.incomplete and row.answer == error["partial"]
    assert row.error_kind == "interrupted"

    page = client.get("/")
    assert page.status_code == 200 and "The answer stopped part-way" in page.text  # the saved partial shows
    assert client.get("/history").status_code == 200

    again = ask(client, QUESTION)
    final = next(e for e in again if e["type"] == "final")
    assert final["answer"].strip()
    assert worker.starts == 2 and worker.pid != killed[0]
    status = admin_status(client)
    reader = next(r for r in status["roles"] if r["role"] == "reader")
    assert reader["worker"]["last_exit"] == "killed by SIGKILL" and reader["worker"]["pid"] == worker.pid
    assert reader["worker"]["variant"]  # which llama.cpp build runs, on the page too
    assert f'llama.cpp build: <code>{reader["worker"]["variant"]}</code>' in client.get("/status").text


def test_a_full_queue_is_refused_with_retry_after_and_nothing_is_stored(live):
    client, app, runtime = live
    client.get("/")  # the browser's identity cookie, shared by the requests below
    holder = runtime.queue.take(capped=False)  # an answer holding the reader
    assert runtime.queue.acquire(holder, timeout=1)
    streams = [[] for _ in range(runtime.settings.queue.max_waiting_per_browser)]
    threads = [threading.Thread(target=ask, args=(client, QUESTION), kwargs={"events": events}) for events in streams]
    try:
        for thread in threads:
            thread.start()
        wait_for(lambda: all(any(e["type"] == "queue" for e in events) for events in streams), timeout=120)
        assert runtime.queue.snapshot()["waiting"] == len(streams)
        before = client.get("/api/history").json()["total"]
        refused = client.post("/api/ask", json={"question": QUESTION})
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 5
        assert refused.json()["kind"] == "busy" and "waiting" in refused.json()["message"]
        assert client.get("/api/history").json()["total"] == before  # nothing stored for the refused one
    finally:
        runtime.queue.finish(holder)
        for thread in threads:
            thread.join(300)
    for events in streams:
        assert any(e["type"] == "queue" and e["ahead"] >= 1 for e in events)  # the real place was shown
        assert any(e["type"] == "final" for e in events)


def test_a_broken_model_shows_on_status_and_the_page_and_the_site_stays_up(tmp_path):
    broken = tmp_path / "truncated.gguf"
    with (MODELS_DIR / GGUF_MODELS["qwen2.5-coder-0.5b"]).open("rb") as src:
        broken.write_bytes(src.read(1024 * 1024))
    runtime = Runtime(make_settings(tmp_path, gguf=str(broken)))
    app = build_app(tmp_path, runtime)
    assert runtime.models.self_test()["state"] == "failed"
    client = app.test_client()
    login(client)
    status = client.get("/status?format=json").get_json()
    assert status["self_test"]["state"] == "failed"
    assert "nistchat models install" in status["self_test"]["roles"]["reader"]["fix"]
    page = client.get("/")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "self-test failed" in html and "truncated.gguf" in html


def test_a_pending_message_is_resumed_at_most_once(tmp_path, light_runtime):
    from nistchat.extensions import db
    from nistchat.models import Conversation

    app = build_app(tmp_path, light_runtime)
    client = app.test_client()
    client.get("/")
    with client.session_transaction() as sess:
        owner = sess["owner"]
    with app.app_context():
        conv = Conversation(owner=owner, title="t")
        db.session.add(conv)
        db.session.flush()
        twice = Message(conversation_id=conv.id, owner=owner, question="q", prompt="q", attempts=2)
        once = Message(conversation_id=conv.id, owner=owner, question="Which documents?", prompt="q",
                       direct_answer="These seven.", attempts=1)
        db.session.add_all([twice, once])
        db.session.commit()
        twice_id, once_id = twice.id, once.id

    body = client.get(f"/ask/stream/{twice_id}").get_data(as_text=True)
    row = stored(app, Message, twice_id)
    assert row.status == "error" and "not tried a third time" in row.error and row.attempts == 2
    assert "not tried a third time" in body

    client.get(f"/ask/stream/{once_id}").get_data(as_text=True)  # resumed: runs to the end once more
    row = stored(app, Message, once_id)
    assert row.status == "done" and row.answer == "These seven." and row.attempts == 2


def test_the_start_up_self_test_waits_its_turn_with_the_reader(runtime):
    """Run beside a person's answer, the self-test's one token waited behind it, timed out, and the
    restart after the timeout cut that answer off: it waits for its turn like an answer."""
    from nistchat.commands.serve import _self_test

    ticket = runtime.queue.take("someone")
    assert runtime.queue.acquire(ticket)  # an answer being written
    runtime.models.self_test_result = {"state": "not run"}
    test = threading.Thread(target=_self_test, args=(runtime,), daemon=True)
    test.start()
    test.join(3)
    assert test.is_alive() and runtime.models.self_test_result["state"] == "not run"
    runtime.queue.finish(ticket)
    test.join(300)
    assert runtime.models.self_test_result["state"] == "passed"
    assert runtime.queue.snapshot()["serving"] == 0

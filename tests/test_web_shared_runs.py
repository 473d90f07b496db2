"""Two web processes on one database (queue.shared = "database"), as two apps with their own run
registries and names: an answer one of them writes is streamed live by the other (its place in
line, its sources and tokens, then the stored message), is run once and stored once; a pending
answer whose writer died is resumed by the other once the writer's lease has run out, never while
it is alive. On SQLite and PostgreSQL, with a real answer over the real tiny index."""
from __future__ import annotations

import threading
import time

import pytest

from nistchat.chat.runs import registry
from nistchat.chat.shared import MirroredRun, RemoteRun, SharedRunRegistry
from nistchat.chat.shared import close as close_app
from nistchat.extensions import db
from nistchat.models import AnswerEvents, AnswerLease, Conversation, Message

from .conftest import make_settings
from .web_support import build_app, message_id, post, sse_events, stored, wait_for

pytestmark = pytest.mark.both_engines
LEASE_S = 2.0  # the tests of leases running out: short, so they wait little
STALL_PROOF_LEASE_S = 15.0  # the default: a whole-process stall on a loaded machine must not end a live answer


@pytest.fixture
def lease_s() -> float:
    return LEASE_S


@pytest.fixture
def shared_url(tmp_path, database_url) -> str:
    return database_url or f"sqlite:///{tmp_path / 'shared.sqlite3'}"


@pytest.fixture
def shared_runtime(tmp_path, tiny_data, light_runtime, shared_url, lease_s):
    """A real Runtime over the tiny index with the shared queue of that database; short answers."""
    from nistchat.engine.runtime import Runtime

    settings = make_settings(tmp_path, data_dir=tiny_data, database_url=shared_url, shared="database",
                             lease_s=lease_s, **{"answer.max_tokens": 24, "verify.mode": "never"})
    runtime = Runtime(settings, light_runtime.models)
    yield runtime
    runtime.queue.close()
    runtime.queue.engine.dispose()


def two_processes(tmp_path, runtime, url):
    settings = {"shared": "database", "lease_s": runtime.settings.queue.lease_s}
    apps = [build_app(tmp_path / name, runtime, database_url=url, settings=settings) for name in ("a", "b")]
    assert all(isinstance(registry(app), SharedRunRegistry) for app in apps)
    clients = [app.test_client() for app in apps]
    clients[0].get("/")
    clients[1].set_cookie("session", clients[0].get_cookie("session").value)  # one browser, two processes
    return apps, clients


def rows(app, model) -> int:
    with app.app_context():
        return db.session.query(model).count()


@pytest.mark.parametrize("lease_s", [STALL_PROOF_LEASE_S])
def test_an_answer_written_by_one_process_streams_live_from_the_other(tmp_path, shared_runtime, shared_url):
    (app_a, app_b), (client_a, client_b) = two_processes(tmp_path, shared_runtime, shared_url)
    held = shared_runtime.queue.take(capped=False)
    assert shared_runtime.queue.acquire(held, timeout=5)  # the reader is busy: the answer waits in line
    asked = post(client_a, "/ask", {"question": "How often is each widget reviewed?"}, htmx=True)
    assert asked.status_code == 200, asked.get_data(as_text=True)[:300]
    mid = message_id(asked.get_data(as_text=True))
    assert isinstance(registry(app_b).get(mid), RemoteRun) and registry(app_a).get(mid) is not None

    chunks: list[str] = []
    seen_place = threading.Event()

    def free_the_reader_once_the_place_is_shown():
        seen_place.wait(60)
        shared_runtime.queue.finish(held)

    releaser = threading.Thread(target=free_the_reader_once_the_place_is_shown)
    releaser.start()
    try:
        for chunk in client_b.get(f"/ask/stream/{mid}", buffered=False).response:  # b streams it
            chunks.append(chunk.decode())
            if "event: queue" in chunk.decode():
                seen_place.set()  # its place in line came from the other process
    finally:
        seen_place.set()
        releaser.join(60)
    names = [name for name, _data in sse_events("".join(chunks))]
    message = stored(app_b, Message, mid)
    assert not message.refused, message.answer  # a refusal never waits for the reader, so it shows no place
    assert names[:2] == ["sources", "queue"] and "token" in names and names[-2:] == ["final", "done"], names

    assert message.status == "done" and message.attempts == 1 and message.answer  # run once, by a
    assert rows(app_a, Message) == 1
    assert rows(app_a, AnswerLease) == 0
    wait_for(lambda: rows(app_a, AnswerEvents) == 0, timeout=15)  # nothing left behind once followers read it
    mirror = registry(app_a).mirror
    wait_for(lambda: mirror._thread is None, timeout=5)  # and no thread left writing to the database
    assert registry(app_b).get(mid) is None  # b never ran it; a reconnect to b gets the stored message
    again = sse_events(client_b.get(f"/ask/stream/{mid}").get_data(as_text=True))
    assert [name for name, _ in again] == ["final", "done"]


def test_a_pending_answer_is_resumed_elsewhere_only_after_its_writers_lease_runs_out(tmp_path, shared_runtime,
                                                                                     shared_url):
    """The writer 'died' holding a fresh lease (a row no process renews): the other process follows
    it until the lease runs out, then the browser's reconnect resumes the answer there, once."""
    (app_a, app_b), (client_a, client_b) = two_processes(tmp_path, shared_runtime, shared_url)
    asked = post(client_a, "/ask", {"question": "Which documents can I ask about?", "topic": "1"}, htmx=True)
    mid = message_id(asked.get_data(as_text=True))
    client_a.get(f"/ask/stream/{mid}")
    wait_for(lambda: rows(app_a, AnswerLease) == 0)  # a released it just after the stream's end
    with app_a.app_context():  # as if a process had died writing it: pending, its lease still fresh
        message = db.session.get(Message, mid)
        message.status, message.attempts = "pending", 1
        db.session.query(AnswerEvents).delete()  # the first run's, stored; a dead writer's would lack `stored`
        db.session.add(AnswerLease(message_id=mid, holder="gone:1:dead", lease_until=time.time() + LEASE_S))
        db.session.commit()

    t = time.monotonic()
    first = client_b.get(f"/ask/stream/{mid}").get_data(as_text=True)  # followed, not run, until the lease ends
    assert LEASE_S * 0.5 <= time.monotonic() - t <= LEASE_S + 5, first
    assert "event: final" not in first and stored(app_b, Message, mid).status == "pending"
    resumed = sse_events(client_b.get(f"/ask/stream/{mid}").get_data(as_text=True))  # the reconnect
    assert [name for name, _ in resumed][-2:] == ["final", "done"]
    message = stored(app_b, Message, mid)
    assert message.status == "done" and message.attempts == 2
    wait_for(lambda: rows(app_b, AnswerLease) == 0, timeout=15)  # released just after the stream's end, as above
    wait_for(lambda: rows(app_b, AnswerEvents) == 0, timeout=15)


def test_a_finished_answer_whose_lease_cannot_be_released_is_let_go(tmp_path, shared_runtime, shared_url):
    """The database fails just as an answer is stored: the mirror stops renewing and copying that
    answer (its lease runs out by itself), so its thread ends instead of retrying for ever."""
    (app_a, _app_b), _clients = two_processes(tmp_path, shared_runtime, shared_url)
    mirror = registry(app_a).mirror
    run = MirroredRun(1, None, mirror)
    mirror.watch(run)
    assert mirror._thread is not None
    AnswerLease.__table__.drop(mirror.engine)  # every write of the lease now fails, as with the database away
    run.close()
    assert run.done and mirror._runs == {}
    wait_for(lambda: mirror._thread is None, timeout=5)


def test_a_live_answers_lease_is_renewed_even_while_its_events_cannot_be_copied(tmp_path, shared_runtime,
                                                                                 shared_url):
    """An answer that outlasts its lease keeps it while its process lives, even when copying its
    events fails each round: only a dead writer's answer is resumed elsewhere."""
    (app_a, app_b), _clients = two_processes(tmp_path, shared_runtime, shared_url)
    mirror = registry(app_a).mirror
    with app_a.app_context():
        conversation = Conversation(owner="someone")
        db.session.add(conversation)
        db.session.flush()
        message = Message(conversation_id=conversation.id, owner="someone", question="Anything?")
        db.session.add(message)
        db.session.commit()
        mid = message.id
    assert mirror.claim(mid)
    run = MirroredRun(mid, None, mirror)
    mirror.watch(run)
    AnswerEvents.__table__.drop(mirror.engine)  # every copy of its events now fails
    try:
        run.publish({"type": "token", "text": "x"})
        time.sleep(LEASE_S * 2)
        assert isinstance(registry(app_b).get(mid), RemoteRun)  # b still follows it: its lease is alive
    finally:
        mirror.forget(run)


def test_a_closed_mirror_leaves_nothing_writing_to_its_database(tmp_path, shared_runtime, shared_url):
    """An app done with its database (a process ending, a test's app before its database goes to
    the next test): closing it deletes a stored answer's events at once, not KEEP_EVENTS_S later,
    and its thread ends, so nothing writes there afterwards."""
    (app_a, _app_b), (client_a, _client_b) = two_processes(tmp_path, shared_runtime, shared_url)
    asked = post(client_a, "/ask", {"question": "Which documents can I ask about?", "topic": "1"}, htmx=True)
    mid = message_id(asked.get_data(as_text=True))
    client_a.get(f"/ask/stream/{mid}")
    wait_for(lambda: rows(app_a, AnswerLease) == 0)  # stored and released; its events kept for followers
    mirror = registry(app_a).mirror
    assert rows(app_a, AnswerEvents) > 0 and mirror._thread is not None
    close_app(app_a)
    assert rows(app_a, AnswerEvents) == 0
    assert mirror._thread is None and mirror._runs == {}

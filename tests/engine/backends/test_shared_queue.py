"""The shared reader queue across processes: caps, slots and CHAT-before-EVAL hold for all of them
together, and a process that dies (SIGKILL, a real one) blocks the line only until its lease runs
out. On SQLite and PostgreSQL; each `make_shared_queue()` is another process's queue on the same
ticket table (its own connections and name), and one test runs a real second process."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from nistchat.engine.backends.queue import EVAL, QueueFull, ReaderQueue
from nistchat.engine.backends.shared_queue import SharedReaderQueue
from tests.conftest import REPO, make_settings


def test_caps_slots_and_places_hold_across_processes(make_shared_queue):
    a = make_shared_queue(max_waiting=3, max_waiting_per_owner=1)
    b = make_shared_queue(max_waiting=3, max_waiting_per_owner=1)
    alice = a.take("alice")
    with pytest.raises(QueueFull) as mine:
        b.take("alice")  # the browser's other question went to the other process: still one waiting
    assert mine.value.scope == "browser"
    bob, carol = b.take("bob"), a.take("carol")
    with pytest.raises(QueueFull) as full:
        b.take("dave")
    assert full.value.scope == "server" and "3 questions are waiting" in full.value.message
    assert a.acquire(alice, timeout=1)
    assert [b.ahead(bob), a.ahead(bob), a.ahead(carol)] == [1, 1, 2]  # the same place seen from both
    assert not b.acquire(bob, timeout=0.1)  # the one slot is the other process's
    with b.borrow() as lent:
        assert not lent
    snapshot = b.snapshot()
    assert (snapshot["waiting"], snapshot["serving"], snapshot["processes"]) == (2, 1, 2)
    a.finish(alice)
    assert b.acquire(bob, timeout=2) and a.ahead(carol) == 1
    assert not a.acquire(carol, timeout=0.1)
    b.finish(bob)
    assert a.acquire(carol, timeout=2)
    a.finish(carol)
    assert a.snapshot()["waiting"] == 0 and b.snapshot()["serving"] == 0


def test_a_chat_in_one_process_goes_before_an_eval_waiting_in_another(make_shared_queue):
    a, b = make_shared_queue(), make_shared_queue()
    busy = a.take("eval", capped=False, priority=EVAL)
    assert a.acquire(busy, timeout=1)
    waiting_eval = b.take("eval", capped=False, priority=EVAL)
    chat = a.take("alice")
    assert b.ahead(waiting_eval) == 2 and b.ahead(chat) == 1
    a.finish(busy)
    assert not b.acquire(waiting_eval, timeout=0.1)
    assert a.acquire(chat, timeout=1)
    a.finish(chat)
    assert b.acquire(waiting_eval, timeout=2)


def test_listeners_hear_chat_activity_of_another_process(make_shared_queue):
    a, b = make_shared_queue(lease_s=2.0), make_shared_queue(lease_s=2.0)
    heard: list[bool] = []
    b.on_chat_active(heard.append)
    ticket = a.take("alice")
    deadline = time.monotonic() + 5
    while heard[-1] is not True and time.monotonic() < deadline:  # seen at b's next heartbeat
        time.sleep(0.05)
    assert heard == [False, True]
    a.finish(ticket)
    while heard[-1] is not False and time.monotonic() < deadline:
        time.sleep(0.05)
    assert heard == [False, True, False]


DEAD = """
import sys, time
from nistchat.engine.backends.shared_queue import SharedReaderQueue, queue_engine
queue = SharedReaderQueue(queue_engine(sys.argv[1]), lease_s=float(sys.argv[2]), poll_s=0.02)
ticket = queue.take("dead", capped=False)
assert queue.acquire(ticket, timeout=20)
print("serving", flush=True)
time.sleep(600)
"""


def test_a_killed_process_blocks_the_line_only_until_its_lease_runs_out(make_shared_queue):
    lease_s = 2.0
    other = subprocess.Popen([sys.executable, "-c", DEAD, make_shared_queue.url, str(lease_s)], cwd=REPO,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "serving"
        queue = make_shared_queue(lease_s=lease_s)
        ticket = queue.take("alice")
        time.sleep(lease_s * 1.5)  # the other process renews its lease meanwhile: still alive, still served
        assert queue.ahead(ticket) == 1 and not queue.acquire(ticket, timeout=0.1)
        assert queue.snapshot()["processes"] == 2
        os.kill(other.pid, signal.SIGKILL)
        killed = time.monotonic()
        assert queue.acquire(ticket, timeout=lease_s * 3)
        assert time.monotonic() - killed <= lease_s + 1.0
        assert queue.snapshot()["processes"] == 1 and queue.snapshot()["serving"] == 1
    finally:
        other.kill()
        other.wait(10)


def test_a_stalled_process_keeps_its_place_when_it_comes_back(make_shared_queue):
    """A process that stalled past its lease (its tickets were deleted as a dead one's) puts its
    ticket back with its old number on the next try, so it keeps its turn."""
    stalled, other = make_shared_queue(lease_s=2.0), make_shared_queue(lease_s=2.0)
    ticket = stalled.take("alice")
    stalled._stopped.set()  # its heartbeat stops renewing
    time.sleep(2.2)
    later = other.take("bob")  # this change deletes the expired ticket
    assert other.snapshot()["waiting"] == 1
    assert stalled.acquire(ticket, timeout=1)
    assert other.ahead(later) == 1 and other.snapshot()["serving"] == 1


@pytest.mark.parametrize("db_engine", ["sqlite", "postgresql"], indirect=True)
def test_the_setting_chooses_the_queue(tmp_path, db_engine, database_url):
    from nistchat.engine.runtime import Runtime

    def queue_of(**overrides):
        settings = make_settings(tmp_path, database_url=database_url, **overrides)
        return Runtime(settings).queue

    shared = queue_of(shared="database", reader_slots=2, lease_s=7)
    assert isinstance(shared, SharedReaderQueue) and shared.slots == 2 and shared.lease_s == 7
    shared.engine.dispose()
    assert type(queue_of(shared="memory")) is ReaderQueue
    auto = queue_of()  # PostgreSQL is the database of several processes; SQLite, of one
    assert isinstance(auto, SharedReaderQueue) == (db_engine == "postgresql")


def test_processes_racing_for_the_last_places_and_the_one_slot_never_exceed_them(make_shared_queue):
    """Many threads in two processes at once: the line's lock lets exactly the cap's worth of
    tickets in, and only one answer at a time holds the one slot."""
    import threading

    queues = [make_shared_queue(max_waiting=5, max_waiting_per_owner=5) for _ in range(2)]
    taken, refused, lock = [], [], threading.Lock()

    def take(i):
        try:
            ticket = queues[i % 2].take(f"browser-{i}")
            with lock:
                taken.append((i % 2, ticket))
        except QueueFull:
            with lock:
                refused.append(i)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(taken) == 5 and len(refused) == 7
    serving, most = [0], [0]

    def use(q, ticket):
        assert queues[q].acquire(ticket, timeout=30)
        with lock:
            serving[0] += 1
            most[0] = max(most[0], serving[0])
        time.sleep(0.05)
        with lock:
            serving[0] -= 1
        queues[q].finish(ticket)

    threads = [threading.Thread(target=use, args=pair) for pair in taken]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert most[0] == 1 and queues[0].snapshot()["waiting"] == 0

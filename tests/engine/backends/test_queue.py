"""The reader queue: arrival order, caps per browser and per server, and places given up. Each test runs
on the in-memory queue of one process and on the shared one (a ticket table) on SQLite and PostgreSQL
(`make_queue`, tests/engine/backends/conftest.py)."""
from __future__ import annotations

import threading
import time

import pytest

from nistchat.engine.backends.queue import EVAL, QueueFull


def test_tickets_are_served_in_arrival_order_and_given_up_places_are_skipped(make_queue):
    queue = make_queue(max_waiting=10, max_waiting_per_owner=10)
    tickets = [queue.take("a") for _ in range(4)]
    assert [queue.ahead(t) for t in tickets] == [0, 1, 2, 3]
    queue.finish(tickets[2])  # refused before generation: never served
    served = []

    def use(ticket):
        assert queue.acquire(ticket, timeout=5)
        served.append(ticket.number)
        queue.finish(ticket)

    threads = [threading.Thread(target=use, args=(t,)) for t in reversed([tickets[0], tickets[1], tickets[3]])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert served == [tickets[0].number, tickets[1].number, tickets[3].number]
    assert queue.snapshot()["waiting"] == 0 and queue.snapshot()["serving"] == 0


def test_a_ticket_waits_while_an_earlier_one_is_served(make_queue):
    queue = make_queue()
    first, second = queue.take(), queue.take()
    assert queue.acquire(first, timeout=1)
    assert queue.ahead(second) == 1
    assert not queue.acquire(second, timeout=0.05)
    queue.finish(first)
    queue.finish(first)  # finishing twice changes nothing
    assert queue.acquire(second, timeout=1) and queue.ahead(second) == 0


def test_one_browser_may_have_only_so_many_waiting(make_queue):
    queue = make_queue(max_waiting=10, max_waiting_per_owner=2)
    queue.take("alice"), queue.take("alice")
    with pytest.raises(QueueFull) as full:
        queue.take("alice")
    assert full.value.scope == "browser" and full.value.retry_after_s >= 5
    assert "2 questions waiting" in full.value.message
    queue.take("bob")  # another browser is not affected
    queue.take(capped=False)  # nor is the CLI


def test_the_server_as_a_whole_has_a_cap_with_a_retry_time(make_queue):
    queue = make_queue(max_waiting=3, max_waiting_per_owner=3)
    held = [queue.take(owner) for owner in ("a", "b", "c")]
    with pytest.raises(QueueFull) as full:
        queue.take("d")
    assert full.value.scope == "server" and "3 questions are waiting" in full.value.message
    assert queue.acquire(held[0], timeout=1)  # serving: no longer waiting, so there is room again
    queue.take("d")


def test_chat_tickets_go_before_eval_tickets_and_each_class_keeps_its_order(make_queue):
    from nistchat.engine.backends.queue import CHAT, EVAL

    queue = make_queue(max_waiting=10, max_waiting_per_owner=10)
    busy = queue.take("eval", capped=False, priority=EVAL)
    assert queue.acquire(busy, timeout=1)  # an eval answer is using the reader
    evals = [queue.take("eval", capped=False, priority=EVAL) for _ in range(2)]
    chats = [queue.take(owner, priority=CHAT) for owner in ("alice", "bob")]
    # a chat waits only for the answer already using the reader, never for waiting eval questions
    assert [queue.ahead(t) for t in chats] == [1, 2]
    assert [queue.ahead(t) for t in evals] == [3, 4]
    assert not queue.acquire(evals[0], timeout=0.05)
    served = []

    def use(ticket):
        assert queue.acquire(ticket, timeout=5)
        served.append(ticket)
        queue.finish(ticket)

    threads = [threading.Thread(target=use, args=(t,)) for t in evals + chats]
    for t in threads:
        t.start()
    queue.finish(busy)
    for t in threads:
        t.join(5)
    assert served == chats + evals
    assert queue.snapshot()["waiting"] == 0 and queue.snapshot()["waiting_eval"] == 0


def test_a_chat_asked_while_an_eval_waits_overtakes_it_and_eval_tickets_do_not_fill_the_caps(make_queue):
    from nistchat.engine.backends.queue import EVAL

    queue = make_queue(max_waiting=1, max_waiting_per_owner=1)
    waiting_eval = queue.take("eval", capped=False, priority=EVAL)
    chat = queue.take("alice")  # the caps count only chat tickets
    assert queue.ahead(chat) == 0 and queue.ahead(waiting_eval) == 1
    assert not queue.acquire(waiting_eval, timeout=0.05)
    assert queue.acquire(chat, timeout=1)
    queue.finish(chat)
    assert queue.acquire(waiting_eval, timeout=1)
    queue.finish(waiting_eval)
    assert not queue.acquire(waiting_eval, timeout=0.05)  # a finished ticket never gets a turn again


def test_listeners_hear_when_a_persons_answer_starts_and_stops_using_the_reader(make_queue):
    """Background work pauses on True and resumes on False; eval tickets alone do not pause it."""
    q = make_queue()
    heard: list[bool] = []
    q.on_chat_active(heard.append)
    assert heard == [False]
    e = q.take(capped=False, priority=EVAL)
    assert q.acquire(e, timeout=1)
    assert heard == [False]  # an evaluation is background work itself
    a = q.take("a")
    assert heard == [False, True]  # waiting counts: the build pauses before the answer's turn
    q.finish(e)
    assert q.acquire(a, timeout=1)
    b = q.take("b")
    q.finish(a)
    assert heard == [False, True]  # b still waits
    assert q.acquire(b, timeout=1)
    q.finish(b)
    assert heard == [False, True, False]
    with q.borrow() as lent:
        assert lent and heard[-1] is True
    assert heard[-1] is False


# -- reader slots: a server that batches serves several answers at once
def test_with_slots_that_many_answers_use_the_reader_at_once_and_the_rest_wait_in_order(make_queue):
    queue = make_queue(max_waiting=10, max_waiting_per_owner=10, slots=3)
    tickets = [queue.take(f"b{i}") for i in range(5)]
    assert [queue.ahead(t) for t in tickets] == [0, 0, 0, 1, 2]  # three go at once; the 4th waits for one
    for t in tickets[:3]:
        assert queue.acquire(t, timeout=1)
    assert queue.snapshot()["serving"] == 3 and queue.snapshot()["slots"] == 3
    assert [queue.ahead(t) for t in tickets[3:]] == [1, 2]
    assert not queue.acquire(tickets[4], timeout=0.05)  # not even the 5th may jump in
    assert not queue.acquire(tickets[3], timeout=0.05)  # all slots taken
    queue.finish(tickets[1])
    assert queue.ahead(tickets[4]) == 1
    assert not queue.acquire(tickets[4], timeout=0.05)  # the freed slot is the 4th's, first in line
    assert queue.acquire(tickets[3], timeout=1)
    queue.finish(tickets[0])
    assert queue.acquire(tickets[4], timeout=1)
    assert queue.snapshot()["serving"] == 3 and queue.snapshot()["waiting"] == 0


def test_slots_keep_arrival_order_when_several_free_at_once(make_queue):
    queue = make_queue(max_waiting=10, max_waiting_per_owner=10, slots=2)
    holders = [queue.take() for _ in range(2)]
    for t in holders:
        assert queue.acquire(t, timeout=1)
    waiting = [queue.take() for _ in range(4)]
    started = []
    lock = threading.Lock()

    def use(ticket):
        assert queue.acquire(ticket, timeout=5)
        with lock:
            started.append(ticket.number)

    threads = [threading.Thread(target=use, args=(t,)) for t in reversed(waiting)]
    for t in threads:
        t.start()
    queue.finish(holders[0])
    queue.finish(holders[1])  # two slots free: the first two in line take them, no one else
    deadline = time.monotonic() + 5
    while len(started) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # time for a wrong third start to show
    assert sorted(started) == [waiting[0].number, waiting[1].number]
    assert queue.ahead(waiting[2]) == 1 and queue.ahead(waiting[3]) == 2
    queue.finish(waiting[0])
    queue.finish(waiting[1])
    for t in threads:
        t.join(5)
    assert sorted(started) == [t.number for t in waiting]


def test_with_slots_a_chat_still_goes_before_waiting_evals_and_the_caps_count_only_waiting_chats(make_queue):
    from nistchat.engine.backends.queue import EVAL

    queue = make_queue(max_waiting=2, max_waiting_per_owner=1, slots=2)
    busy = [queue.take("eval", capped=False, priority=EVAL) for _ in range(2)]
    for t in busy:
        assert queue.acquire(t, timeout=1)  # eval answers hold both slots
    evals = [queue.take("eval", capped=False, priority=EVAL) for _ in range(3)]
    alice, bob = queue.take("alice"), queue.take("bob")
    assert [queue.ahead(t) for t in (alice, bob)] == [1, 2]
    assert [queue.ahead(t) for t in evals] == [3, 4, 5]
    with pytest.raises(QueueFull) as mine:
        queue.take("alice")  # per browser: one waiting
    assert mine.value.scope == "browser"
    with pytest.raises(QueueFull) as full:
        queue.take("carol")  # server: two chats waiting (evals do not count)
    assert full.value.scope == "server"
    queue.finish(busy[0])
    assert not queue.acquire(evals[0], timeout=0.05)  # the free slot is alice's
    assert queue.acquire(alice, timeout=1)
    queue.finish(busy[1])
    assert queue.acquire(bob, timeout=1)
    queue.finish(alice)
    assert queue.acquire(evals[0], timeout=1)  # no chat waiting: an eval takes the slot


def test_slots_shorten_the_retry_time_and_borrow_uses_a_free_slot(make_queue):
    one = make_queue(max_waiting=1, slots=1)
    one._service_s.append(40.0)  # a typical answer
    first = one.take("a")
    with pytest.raises(QueueFull) as slow:
        one.take("b")
    one.finish(first)
    four = make_queue(max_waiting=1, slots=4)
    four._service_s.append(40.0)
    second = four.take("a")
    with pytest.raises(QueueFull) as fast:
        four.take("b")
    assert slow.value.retry_after_s == 40 and fast.value.retry_after_s == 10  # four answers finish at once
    four.finish(second)
    queue = make_queue(slots=2)
    held = queue.take()
    assert queue.acquire(held, timeout=1)
    with queue.borrow() as lent:
        assert lent and queue.snapshot()["serving"] == 2
        with queue.borrow() as second:
            assert not second  # both slots in use
    assert queue.snapshot()["serving"] == 1

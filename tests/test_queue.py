"""The reader queue: arrival order, caps per browser and per server, and places given up."""
from __future__ import annotations

import threading

import pytest

from nistchat.engine.queue import EVAL, QueueFull, ReaderQueue


def test_tickets_are_served_in_arrival_order_and_given_up_places_are_skipped():
    queue = ReaderQueue(max_waiting=10, max_waiting_per_owner=10)
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


def test_a_ticket_waits_while_an_earlier_one_is_served():
    queue = ReaderQueue()
    first, second = queue.take(), queue.take()
    assert queue.acquire(first, timeout=1)
    assert queue.ahead(second) == 1
    assert not queue.acquire(second, timeout=0.05)
    queue.finish(first)
    queue.finish(first)  # finishing twice changes nothing
    assert queue.acquire(second, timeout=1) and queue.ahead(second) == 0


def test_one_browser_may_have_only_so_many_waiting():
    queue = ReaderQueue(max_waiting=10, max_waiting_per_owner=2)
    queue.take("alice"), queue.take("alice")
    with pytest.raises(QueueFull) as full:
        queue.take("alice")
    assert full.value.scope == "browser" and full.value.retry_after_s >= 5
    assert "2 questions waiting" in full.value.message
    queue.take("bob")  # another browser is not affected
    queue.take(capped=False)  # nor is the CLI


def test_the_server_as_a_whole_has_a_cap_with_a_retry_time():
    queue = ReaderQueue(max_waiting=3, max_waiting_per_owner=3)
    held = [queue.take(owner) for owner in ("a", "b", "c")]
    with pytest.raises(QueueFull) as full:
        queue.take("d")
    assert full.value.scope == "server" and "3 questions are waiting" in full.value.message
    assert queue.acquire(held[0], timeout=1)  # serving: no longer waiting, so there is room again
    queue.take("d")


def test_chat_tickets_go_before_eval_tickets_and_each_class_keeps_its_order():
    from nistchat.engine.queue import CHAT, EVAL

    queue = ReaderQueue(max_waiting=10, max_waiting_per_owner=10)
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


def test_a_chat_asked_while_an_eval_waits_overtakes_it_and_eval_tickets_do_not_fill_the_caps():
    from nistchat.engine.queue import EVAL

    queue = ReaderQueue(max_waiting=1, max_waiting_per_owner=1)
    waiting_eval = queue.take("eval", capped=False, priority=EVAL)
    chat = queue.take("alice")  # the caps count only chat tickets
    assert queue.ahead(chat) == 0 and queue.ahead(waiting_eval) == 1
    assert not queue.acquire(waiting_eval, timeout=0.05)
    assert queue.acquire(chat, timeout=1)
    queue.finish(chat)
    assert queue.acquire(waiting_eval, timeout=1)
    queue.finish(waiting_eval)
    assert not queue.acquire(waiting_eval, timeout=0.05)  # a finished ticket never gets a turn again


def test_listeners_hear_when_a_persons_answer_starts_and_stops_using_the_reader():
    """Background work pauses on True and resumes on False; eval tickets alone do not pause it."""
    q = ReaderQueue()
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

"""The reader queue: arrival order, caps per browser and per server, and places given up."""
from __future__ import annotations

import threading

import pytest

from nistchat.engine.queue import QueueFull, ReaderQueue


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

"""One queue in front of the reader: answers take a ticket when asked and use the reader in
ticket order, `slots` answers at a time (each with its generation, verification and retry
together); one slot unless the reader is a server that batches (`queue.reader_slots`).

Why at the answer level: a reader serves one generation at a time, and an answer is several
calls to it. Interleaving them would make every answer wait for every other. Why caps: on a
2-core machine an answer takes 5-30 s, so an unbounded queue means a silent quarter-hour wait.
Past a cap the caller is told at once, with a time to retry after (HTTP 429/503 on the web).

Why priorities: evaluation runs use the same reader as the people chatting, and a person must not
wait behind a hundred eval questions. A ticket has a class (CHAT before EVAL): an EVAL ticket takes a
slot only when no CHAT ticket is waiting for it, so a chat waits at most for the answers already
using the reader. Within a class, tickets are served in arrival order.
"""
from __future__ import annotations

import collections
import contextlib
import math
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator

DEFAULT_SERVICE_S = 30.0
CHAT, EVAL = 0, 1  # ticket classes: a lower class is served first


class QueueFull(RuntimeError):
    """No ticket: the caller (`scope` 'browser' or 'server') should retry after `retry_after_s`."""

    def __init__(self, message: str, scope: str, retry_after_s: int):
        super().__init__(message)
        self.message, self.scope, self.retry_after_s = message, scope, retry_after_s


@dataclass(frozen=True)
class Ticket:
    number: int
    owner: str | None = None
    priority: int = CHAT

    @property
    def key(self) -> tuple[int, int]:
        """Serving order: class first, then arrival."""
        return (self.priority, self.number)


class ReaderQueue:
    """FIFO tickets per class (CHAT before EVAL) with per-owner and global caps on how many may wait.

    A ticket is waiting from `take()` until `acquire()` returns True for it, then serving until
    `finish()`. `finish()` also gives up a ticket that was never served (the answer was refused
    before generation, or failed), so the tickets behind it move up. A ticket's turn comes when
    fewer than `slots` are serving and it is among the first free-slots waiting ones by
    (class, arrival).
    """

    def __init__(self, max_waiting: int = 12, max_waiting_per_owner: int = 2, slots: int = 1):
        self.max_waiting, self.max_waiting_per_owner = max_waiting, max_waiting_per_owner
        self.slots = max(1, slots)  # answers using the reader at once
        self._cond = threading.Condition()
        self._next = 0
        self._waiting: dict[int, Ticket] = {}
        self._busy: dict[int, float] = {}  # serving ticket -> when it started
        self._service_s: collections.deque[float] = collections.deque(maxlen=20)
        self._chat_serving: set[int] = set()  # serving tickets of class CHAT (and borrows)
        self._listeners: list[Callable[[bool], None]] = []
        self._chat_active = False

    # -- who else wants to know
    def on_chat_active(self, listener: Callable[[bool], None]) -> None:
        """Call `listener(True)` when a person's answer starts holding or waiting for the reader and
        `listener(False)` when none does any more (background work pauses meanwhile: engine/background.py)."""
        with self._cond:
            self._listeners.append(listener)
            listener(self._chat_active)

    def _changed(self) -> None:
        """After any change, under the lock: tell the listeners when CHAT activity starts or stops."""
        active = bool(self._chat_serving) or any(t.priority == CHAT for t in self._waiting.values())
        if active != self._chat_active:
            self._chat_active = active
            for listener in self._listeners:
                listener(active)

    # -- taking a ticket
    def take(self, owner: str | None = None, *, capped: bool = True, priority: int = CHAT) -> Ticket:
        """A new ticket, or QueueFull when the owner or the server already has too many waiting.
        `capped=False` is for callers with nobody to tell (the CLI, the self-test, eval runs).
        `priority=EVAL` tickets wait while any CHAT ticket waits; they never count against the caps."""
        with self._cond:
            if capped:
                chats = [t for t in self._waiting.values() if t.priority == CHAT]
                self._check_caps(owner, len(chats), sum(1 for t in chats if owner is not None and t.owner == owner))
            ticket = Ticket(self._next, owner, priority)
            self._next += 1
            self._waiting[ticket.number] = ticket
            self._changed()
            return ticket

    def _check_caps(self, owner: str | None, waiting: int, mine: int) -> None:
        """QueueFull when this owner (`mine` of the `waiting` CHAT tickets) or the server is at its cap."""
        if owner is not None and mine >= self.max_waiting_per_owner:
            raise QueueFull(f"You already have {mine} questions waiting for the reader. "
                            "Please wait for one of them to be answered.", "browser", self._retry_after(1))
        if waiting >= self.max_waiting:
            raise QueueFull(f"The reader is busy: {waiting} questions are waiting. "
                            "Please try again shortly.", "server", self._retry_after(waiting - self.max_waiting + 1))

    def _retry_after(self, answers: int) -> int:
        typical = sum(self._service_s) / len(self._service_s) if self._service_s else DEFAULT_SERVICE_S
        return max(5, math.ceil(typical * answers / self.slots))  # `slots` answers finish at once

    # -- waiting for the turn
    def ahead(self, ticket: Ticket) -> int:
        """Answers that must finish with the reader before this ticket gets a slot (0 once it is
        serving, or when a slot is free for it)."""
        with self._cond:
            if ticket.number not in self._waiting:
                return 0
            return max(0, self._before(ticket) + len(self._busy) - self.slots + 1)

    def _before(self, ticket: Ticket) -> int:
        return sum(1 for t in self._waiting.values() if t.key < ticket.key)

    def _turn(self, ticket: Ticket) -> bool:
        return self._before(ticket) < self.slots - len(self._busy)

    def acquire(self, ticket: Ticket, timeout: float | None = None) -> bool:
        """Wait until it is this ticket's turn; True once it is serving."""
        with self._cond:
            if ticket.number in self._busy:
                return True
            if ticket.number not in self._waiting:
                return False  # given up (finished) before its turn
            if not self._cond.wait_for(lambda: ticket.number in self._waiting and self._turn(ticket),
                                       timeout=timeout):
                return False
            self._waiting.pop(ticket.number, None)
            self._busy[ticket.number] = time.monotonic()
            if ticket.priority == CHAT:
                self._chat_serving.add(ticket.number)
            self._changed()
            return True

    @contextlib.contextmanager
    def turn(self, owner: str | None = None, *, priority: int = CHAT) -> Iterator[Ticket]:
        """A ticket of one's own, held from its turn until the block ends (for a short job that
        must wait its turn, like judging an eval answer): take, acquire and finish in one place."""
        ticket = self.take(owner, capped=False, priority=priority)
        try:
            self.acquire(ticket)
            yield ticket
        finally:
            self.finish(ticket)

    @contextlib.contextmanager
    def borrow(self) -> Iterator[bool]:
        """Use the reader for a moment without waiting: yields True, holding a slot until the block
        ends, when a slot is free; else False at once. For short, bounded jobs that
        an answer's turn should not wait behind (query rewriting)."""
        with self._cond:
            lent = len(self._busy) < self.slots
            if lent:
                ticket = Ticket(self._next, None, CHAT)
                self._next += 1
                self._busy[ticket.number] = time.monotonic()
                self._chat_serving.add(ticket.number)
                self._changed()
        try:
            yield lent
        finally:
            if lent:
                with self._cond:
                    self._busy.pop(ticket.number, None)  # not a served answer: no service time recorded
                    self._chat_serving.discard(ticket.number)
                    self._changed()
                    self._cond.notify_all()

    def finish(self, ticket: Ticket) -> None:
        """Done with the reader, or giving up the place; safe to call more than once."""
        with self._cond:
            started = self._busy.pop(ticket.number, None)
            if started is not None:
                self._service_s.append(time.monotonic() - started)
            elif self._waiting.pop(ticket.number, None) is None:
                return  # already finished
            self._chat_serving.discard(ticket.number)
            self._changed()
            self._cond.notify_all()

    def snapshot(self) -> dict:
        with self._cond:
            return {"waiting": len(self._waiting), "serving": len(self._busy), "slots": self.slots,
                    "max_waiting": self.max_waiting,
                    "waiting_eval": sum(1 for t in self._waiting.values() if t.priority != CHAT),
                    "max_waiting_per_browser": self.max_waiting_per_owner}

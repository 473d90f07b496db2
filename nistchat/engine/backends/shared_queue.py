"""The reader queue of several web processes: the same tickets, places, caps and slots as the
in-memory `ReaderQueue`, kept in one table of the site's database so they hold across processes
(`queue.shared`; docs/deployment.md, scale-out).

Why a table and not a message broker: the processes already share the database, and a ticket
is a few writes per answer against 5-30 s of reader time. Each change that depends on what the
others hold (taking a ticket under the caps, taking a slot, lending one) runs in one short
transaction that has the line to itself: `BEGIN IMMEDIATE` on SQLite, a self-excluding table lock
on PostgreSQL (row locks alone cannot stop two processes from each counting a free slot and both
taking it: the rows they would have to lock do not exist yet). Places and snapshots are plain
reads.

Why leases: a process that dies (a crash, an OOM kill, a power cut) cannot give up its tickets.
Each process renews its own tickets' lease every `lease_s / 3`; a ticket whose lease ran out
counts for nothing and is deleted by the next change, so a dead process blocks the line for at
most `lease_s`. A ticket of this process that another deleted meanwhile (this process was
stalled past its lease) is put back with its old number, so its place is kept.

Waiting is polling (`poll_s`) plus a wake-up from this process's own changes: another process's
finish is seen within `poll_s`, against answers that take seconds.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from typing import Callable, Iterator

from sqlalchemy import Column, Float, Index, Integer, MetaData, String, Table, delete, func, insert, select, tuple_, \
    update
from sqlalchemy.engine import Connection, Engine

from .queue import CHAT, ReaderQueue, Ticket

log = logging.getLogger(__name__)

metadata = MetaData()
# One row per ticket, from `take` until `finish`. state: waiting | serving | lent (a borrow).
reader_ticket = Table(
    "reader_ticket", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),  # arrival order across processes
    Column("priority", Integer, nullable=False),
    Column("owner", String(64)),
    Column("state", String(8), nullable=False),
    Column("holder", String(80), nullable=False),  # the process: host:pid:boot
    Column("lease_until", Float, nullable=False),  # epoch seconds
    Index("ix_reader_ticket_holder", "holder"),
    sqlite_autoincrement=True,  # never a finished ticket's number again (a late finish() must not hit it)
)
WAITING, SERVING, LENT = "waiting", "serving", "lent"


def process_name() -> str:
    """This process, for the rows it holds: host and pid (for a person reading the table) and a
    random part (a pid reused after a restart is another process)."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LineLock:
    """How one engine gives a transaction the line to itself (the only engine-specific part)."""

    @staticmethod
    def for_engine(engine: Engine) -> "LineLock":
        return SQLiteLineLock(engine) if engine.dialect.name == "sqlite" else PostgresLineLock(engine)

    def __init__(self, engine: Engine):
        self.engine = engine

    @contextlib.contextmanager
    def locked(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            self.lock(conn)
            yield conn

    def lock(self, conn: Connection) -> None:
        raise NotImplementedError


class PostgresLineLock(LineLock):
    def lock(self, conn: Connection) -> None:
        # SHARE ROW EXCLUSIVE conflicts with itself and with writes, not with plain reads.
        conn.exec_driver_sql("LOCK TABLE reader_ticket IN SHARE ROW EXCLUSIVE MODE")


class SQLiteLineLock(LineLock):
    """pysqlite would open the transaction only at the first write, after the counts were read:
    the driver's own transaction handling is turned off and the queue's engine begins every
    transaction itself, `BEGIN IMMEDIATE` (the database's write lock) for the locked ones."""

    def __init__(self, engine: Engine):
        super().__init__(engine)
        from sqlalchemy import event

        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection, _record):
            dbapi_connection.isolation_level = None
            dbapi_connection.execute("PRAGMA busy_timeout=15000")

        @event.listens_for(engine, "begin")
        def _begin(conn):
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("line_lock") else "BEGIN")

    @contextlib.contextmanager
    def locked(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            conn.execution_options(line_lock=True)
            with conn.begin():
                yield conn

    def lock(self, conn: Connection) -> None:
        pass  # BEGIN IMMEDIATE took it


class SharedReaderQueue(ReaderQueue):
    """`ReaderQueue`'s interface and rules over the `reader_ticket` table (migration 0009)."""

    def __init__(self, engine: Engine, max_waiting: int = 12, max_waiting_per_owner: int = 2, slots: int = 1,
                 *, lease_s: float = 15.0, poll_s: float = 0.25, holder: str | None = None):
        super().__init__(max_waiting, max_waiting_per_owner, slots)
        self.engine, self.lease_s, self.poll_s = engine, lease_s, poll_s
        self.holder = holder or process_name()
        self._line = LineLock.for_engine(engine)
        self._mine: dict[int, str] = {}  # this process's unfinished tickets -> their state
        self._started: dict[int, float] = {}
        self._beat: threading.Thread | None = None
        self._stopped = threading.Event()

    # -- rows
    def _live(self, now: float):
        return reader_ticket.c.lease_until >= now

    def _lease(self) -> float:
        return time.time() + self.lease_s

    def _expire(self, conn: Connection, now: float) -> None:
        conn.execute(delete(reader_ticket).where(reader_ticket.c.lease_until < now))

    def _counts(self, conn: Connection, now: float) -> tuple[int, int]:
        """(serving or lent, waiting CHAT) among live tickets."""
        t = reader_ticket.c
        busy = conn.execute(select(func.count()).where(self._live(now), t.state != WAITING)).scalar_one()
        chats = conn.execute(select(func.count()).where(self._live(now), t.state == WAITING,
                                                        t.priority == CHAT)).scalar_one()
        return int(busy), int(chats)

    def _before(self, conn: Connection, ticket: Ticket, now: float) -> int:
        t = reader_ticket.c
        return int(conn.execute(select(func.count()).where(
            self._live(now), t.state == WAITING,
            tuple_(t.priority, t.id) < tuple_(ticket.priority, ticket.number))).scalar_one())

    def _state(self, conn: Connection, ticket: Ticket) -> str | None:
        return conn.execute(select(reader_ticket.c.state).where(reader_ticket.c.id == ticket.number)).scalar()

    def _keep(self, conn: Connection, ticket: Ticket, state: str) -> None:
        """Put back a ticket of this live process that was taken for dead, with its old number."""
        log.warning("reader ticket %s outlived its lease (this process stalled); put back", ticket.number)
        conn.execute(insert(reader_ticket).values(id=ticket.number, priority=ticket.priority, owner=ticket.owner,
                                                  state=state, holder=self.holder, lease_until=self._lease()))

    # -- the interface
    def take(self, owner: str | None = None, *, capped: bool = True, priority: int = CHAT) -> Ticket:
        self._start_beat()
        with self._line.locked() as conn:
            now = time.time()
            self._expire(conn, now)
            if capped:
                t = reader_ticket.c
                _busy, chats = self._counts(conn, now)
                mine = 0 if owner is None else int(conn.execute(select(func.count()).where(
                    self._live(now), t.state == WAITING, t.priority == CHAT, t.owner == owner)).scalar_one())
                self._check_caps(owner, chats, mine)
            number = conn.execute(insert(reader_ticket).values(
                priority=priority, owner=owner, state=WAITING, holder=self.holder,
                lease_until=self._lease())).inserted_primary_key[0]
        with self._cond:
            self._mine[number] = WAITING
        self._changed()
        return Ticket(int(number), owner, priority)

    def ahead(self, ticket: Ticket) -> int:
        with self.engine.connect() as conn:
            now = time.time()
            if self._state(conn, ticket) != WAITING:
                return 0
            busy, _chats = self._counts(conn, now)
            return max(0, self._before(conn, ticket, now) + busy - self.slots + 1)

    def _try(self, ticket: Ticket) -> bool | None:
        """True: serving; False: finished (no turn ever); None: not yet."""
        with self._cond:
            local = self._mine.get(ticket.number)
        if local is None:
            return False  # finished here, or not this process's ticket
        if local == SERVING:
            return True
        with self.engine.connect() as conn:  # a read first: most tries find it is not the turn yet
            now = time.time()
            state = self._state(conn, ticket)
            if state == WAITING:
                busy, _chats = self._counts(conn, now)
                if self._before(conn, ticket, now) >= self.slots - busy:
                    return None
        with self._line.locked() as conn:
            now = time.time()
            self._expire(conn, now)
            state = self._state(conn, ticket)
            if state is None:
                self._keep(conn, ticket, WAITING)
            busy, _chats = self._counts(conn, now)
            if self._before(conn, ticket, now) >= self.slots - busy:
                return None
            conn.execute(update(reader_ticket).where(reader_ticket.c.id == ticket.number)
                         .values(state=SERVING, lease_until=self._lease()))
        with self._cond:
            if ticket.number in self._mine:
                self._mine[ticket.number] = SERVING
                self._started[ticket.number] = time.monotonic()
        self._changed()
        return True

    def acquire(self, ticket: Ticket, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            got = self._try(ticket)
            if got is not None:
                return got
            left = self.poll_s if deadline is None else min(self.poll_s, deadline - time.monotonic())
            if left <= 0:
                return False
            with self._cond:
                self._cond.wait(left)

    @contextlib.contextmanager
    def borrow(self) -> Iterator[bool]:
        self._start_beat()
        number = None
        with self._line.locked() as conn:
            now = time.time()
            busy, _chats = self._counts(conn, now)
            if busy < self.slots:
                number = conn.execute(insert(reader_ticket).values(
                    priority=CHAT, owner=None, state=LENT, holder=self.holder,
                    lease_until=self._lease())).inserted_primary_key[0]
        if number is not None:
            with self._cond:
                self._mine[number] = LENT
            self._changed()
        try:
            yield number is not None
        finally:
            if number is not None:
                self._drop(number)

    def finish(self, ticket: Ticket) -> None:
        with self._cond:
            if self._mine.get(ticket.number) == SERVING and ticket.number in self._started:
                self._service_s.append(time.monotonic() - self._started[ticket.number])
        self._drop(ticket.number)

    def _drop(self, number: int) -> None:
        with self._cond:
            if self._mine.pop(number, None) is None:
                return  # finished already (finish is safe to call twice)
            self._started.pop(number, None)
        with self.engine.begin() as conn:
            conn.execute(delete(reader_ticket).where(reader_ticket.c.id == number,
                                                     reader_ticket.c.holder == self.holder))
        self._changed()
        with self._cond:
            self._cond.notify_all()

    def snapshot(self) -> dict:
        t = reader_ticket.c
        with self.engine.connect() as conn:
            now = time.time()
            rows = conn.execute(select(t.state, t.priority, func.count()).where(self._live(now))
                                .group_by(t.state, t.priority)).all()
            processes = conn.execute(select(func.count(t.holder.distinct())).where(self._live(now))).scalar_one()
        count = lambda states, chat=None: sum(n for s, p, n in rows  # noqa: E731
                                              if s in states and (chat is None or (p == CHAT) == chat))
        return {"waiting": count({WAITING}), "serving": count({SERVING, LENT}), "slots": self.slots,
                "max_waiting": self.max_waiting, "waiting_eval": count({WAITING}, chat=False),
                "max_waiting_per_browser": self.max_waiting_per_owner, "shared": True,
                "processes": int(processes)}

    # -- CHAT activity, across processes
    def on_chat_active(self, listener: Callable[[bool], None]) -> None:
        self._start_beat()
        with self._cond:
            self._listeners.append(listener)
            listener(self._chat_active)
        self._changed()

    def _changed(self) -> None:
        """Tell the listeners when CHAT tickets appear or vanish anywhere (checked after each change
        here and at each heartbeat, for the other processes' changes)."""
        if not self._listeners:
            return
        t = reader_ticket.c
        try:
            with self.engine.connect() as conn:
                active = conn.execute(select(t.id).where(self._live(time.time()), t.priority == CHAT)
                                      .limit(1)).first() is not None
        except Exception:  # the database is away: the listeners keep what they had
            log.warning("reader queue: cannot read the ticket table", exc_info=True)
            return
        with self._cond:
            if active == self._chat_active:
                return
            self._chat_active = active
            for listener in self._listeners:
                listener(active)

    # -- leases
    def _start_beat(self) -> None:
        with self._cond:
            if self._beat is None:
                self._beat = threading.Thread(target=self._heartbeat, name="reader-queue-lease", daemon=True)
                self._beat.start()

    def renew(self) -> None:
        """Extend this process's tickets and delete the expired ones of dead processes."""
        with self._cond:
            mine = list(self._mine)
        with self.engine.begin() as conn:
            if mine:
                conn.execute(update(reader_ticket).where(reader_ticket.c.holder == self.holder)
                             .values(lease_until=self._lease()))
            self._expire(conn, time.time())
        self._changed()
        with self._cond:
            self._cond.notify_all()  # a dead process's tickets are gone: waiters here look again

    def _heartbeat(self) -> None:
        while not self._stopped.wait(self.lease_s / 3):
            try:
                self.renew()
            except Exception:
                log.warning("reader queue: cannot renew the ticket leases", exc_info=True)

    def close(self) -> None:
        """Give up this process's tickets (a clean shutdown; a crash leaves them to the lease)."""
        self._stopped.set()
        with self._cond:
            mine, self._mine = list(self._mine), {}
        if mine:
            with self.engine.begin() as conn:
                conn.execute(delete(reader_ticket).where(reader_ticket.c.id.in_(mine)))


def queue_engine(url: str) -> Engine:
    """The queue's own connections to the site's database (the engine has no Flask app to borrow from)."""
    from sqlalchemy import create_engine

    if url.startswith("sqlite"):
        return create_engine(url, connect_args={"timeout": 15, "check_same_thread": False})
    return create_engine(url, pool_pre_ping=True, pool_size=4, max_overflow=8)  # pre-ping: a restarted server


def reader_queue(settings) -> ReaderQueue:
    """The queue for these settings: in memory for one process, in the database when several
    processes share it (`queue.shared`, Settings.shared_queue)."""
    q = settings.queue
    if not settings.shared_queue:
        return ReaderQueue(q.max_waiting, q.max_waiting_per_browser, slots=q.reader_slots)
    return SharedReaderQueue(queue_engine(settings.database_uri), q.max_waiting, q.max_waiting_per_browser,
                             slots=q.reader_slots, lease_s=q.lease_s)

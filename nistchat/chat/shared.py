"""Answers in progress across web processes (`queue.shared`): behind nginx's round robin, the
stream request of an answer lands on any process, not only on the one writing it.

The writing process holds a lease on the answer (`answer_run`, renewed while it runs) and copies
its stream events into `answer_event` a batch every `FLUSH_S`; another process sends the same
stream from there (`RemoteRun`, the `AnswerRun.follow` interface `stream.sse_events` reads), a
fraction of a second behind. When the answer is stored the lease and the events are deleted: a
follower then sends the stored message, as any process does for a finished answer. A process
resumes a pending answer only by taking its lease, which it gets only when nobody holds it or
the holder's lease ran out (it died): never two runs of one question.

Why copy batches instead of each token: a token every ~50 ms would be a write each; a batch every
0.3 s is a few writes a second for every answer being written, on any engine.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from typing import Iterator

from flask import Flask
from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from ..engine.backends import process_name
from ..models import AnswerEvents, AnswerLease, Message
from .runs import AnswerRun, RunRegistry

log = logging.getLogger(__name__)
FLUSH_S = 0.3  # how far behind another process's stream runs
POLL_S = 0.3
KEEP_EVENTS_S = 2.0  # a stored answer's events stay this long for followers a poll or two behind
LEASES = AnswerLease.__table__
EVENTS = AnswerEvents.__table__
MESSAGES = Message.__table__


class RunMirror:
    """This process's answers in the database: their leases and their events."""

    def __init__(self, engine: Engine, lease_s: float, holder: str | None = None):
        self.engine, self.lease_s = engine, lease_s
        self.holder = holder or process_name()
        self._runs: dict[int, MirroredRun] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def claim(self, message_id: int) -> bool:
        """The lease on this answer, when nobody alive holds it; a dead writer's events go with its lease."""
        now = time.time()
        try:
            with self.engine.begin() as conn:
                conn.execute(delete(LEASES).where(LEASES.c.message_id == message_id, LEASES.c.lease_until < now))
                conn.execute(insert(LEASES).values(message_id=message_id, holder=self.holder,
                                                   lease_until=now + self.lease_s))
                conn.execute(delete(EVENTS).where(EVENTS.c.message_id == message_id))
        except IntegrityError:
            return False
        return True

    def remote(self, message_id: int) -> "RemoteRun | None":
        """The answer as another live process writes it, or None when no one else does."""
        with self.engine.connect() as conn:
            held = conn.execute(select(LEASES.c.holder).where(LEASES.c.message_id == message_id,
                                                              LEASES.c.lease_until >= time.time())).scalar()
        return RemoteRun(self.engine, message_id) if held is not None and held != self.holder else None

    def watch(self, run: "MirroredRun") -> None:
        with self._lock:
            self._runs[run.message_id] = run
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="answer-mirror", daemon=True)
                self._thread.start()

    def forget(self, run: "MirroredRun") -> None:
        """Stop renewing and copying `run` (its lease then runs out by itself); the thread ends
        with the last run."""
        with self._lock:
            self._runs.pop(run.message_id, None)

    def release(self, run: "MirroredRun") -> None:
        """The answer is stored: its last events (the `stored` one included) and the end of its
        lease in one transaction, so a follower that finds the lease gone has every event; the
        events are deleted KEEP_EVENTS_S later, when every follower has read them."""
        with run.flush_lock:
            with self.engine.begin() as conn:
                self._write(conn, run)
                conn.execute(delete(LEASES).where(LEASES.c.message_id == run.message_id,
                                                  LEASES.c.holder == self.holder))
            run.released_at = time.monotonic()

    def _write(self, conn, run: "MirroredRun") -> None:
        batch = run.events[run.flushed:]
        if batch:
            conn.execute(insert(EVENTS).values(message_id=run.message_id, seq=run.flushed,
                                               events=json.dumps(batch, default=str)))
            run.flushed += len(batch)

    def flush(self, run: "MirroredRun") -> None:
        with run.flush_lock:
            if run.released_at is not None:
                if time.monotonic() - run.released_at >= KEEP_EVENTS_S:
                    with self.engine.begin() as conn:
                        conn.execute(delete(EVENTS).where(EVENTS.c.message_id == run.message_id))
                    with self._lock:
                        self._runs.pop(run.message_id, None)
                return
            if run.events[run.flushed:]:
                with self.engine.begin() as conn:
                    self._write(conn, run)

    def renew(self) -> None:
        with self._lock:
            ids = [i for i, run in self._runs.items() if run.released_at is None]
        if ids:
            with self.engine.begin() as conn:
                conn.execute(update(LEASES).where(LEASES.c.holder == self.holder, LEASES.c.message_id.in_(ids))
                             .values(lease_until=time.time() + self.lease_s))

    def close(self) -> None:
        """Stop writing to the database: the app is done with it (a process ending, a test's app
        whose database goes to the next test). An answer still being written loses its lease by
        running out, as a dead writer's does; a stored answer's events are deleted now rather
        than KEEP_EVENTS_S later, which would be in a database that may by then be another's."""
        with self._lock:
            runs, thread = list(self._runs.values()), self._thread
            self._runs.clear()  # the thread ends at its next round
        if thread is not None:
            thread.join(timeout=4 * FLUSH_S)
        released = [run.message_id for run in runs if run.released_at is not None]
        if released:
            try:
                with self.engine.begin() as conn:
                    conn.execute(delete(EVENTS).where(EVENTS.c.message_id.in_(released)))
            except Exception:  # the database is gone already: nothing is left to follow there
                log.warning("answer mirror: cannot delete the stored answers' events", exc_info=True)

    def _loop(self) -> None:
        """Flush and renew while this process has answers in the database; then end, so an idle
        process (or one whose database has gone away for good) holds no thread that writes to it.
        `watch` starts it again with the next answer."""
        renewed = time.monotonic()
        failing = False
        while True:
            time.sleep(FLUSH_S)
            with self._lock:
                runs = list(self._runs.values())
                if not runs:
                    self._thread = None
                    return
            try:  # leases first: events that cannot be copied must not let a live answer's lease run out
                if time.monotonic() - renewed >= self.lease_s / 3:
                    self.renew()
                    renewed = time.monotonic()
                for run in runs:
                    self.flush(run)
                failing = False
            except Exception:  # the database is away for a moment: the next round tries again
                if not failing:
                    log.warning("answer mirror: cannot write to the database", exc_info=True)
                failing = True


class MirroredRun(AnswerRun):
    """An AnswerRun whose events the mirror copies; closing it (the answer is stored) releases it."""

    def __init__(self, message_id: int, ticket, mirror: RunMirror):
        super().__init__(message_id, ticket)
        self.mirror = mirror
        self.flushed = 0  # events copied to the database
        self.released_at: float | None = None
        self.flush_lock = threading.Lock()

    def close(self) -> None:
        try:
            self.mirror.release(self)
        except Exception:  # the lease runs out by itself; followers then read the stored message
            log.warning("answer %s: cannot release its lease", self.message_id, exc_info=True)
            self.mirror.forget(self)  # so it is not renewed for ever, nor written to a database gone for good
        super().close()


class RemoteRun:
    """An answer another process writes, followed from the database (what `sse_events` reads of a run)."""

    def __init__(self, engine: Engine, message_id: int, poll_s: float = POLL_S):
        self.engine, self.message_id, self.poll_s = engine, message_id, poll_s

    def follow(self, tick_s: float) -> Iterator[dict | None]:
        """Every event from the first, then a `stored` event once the answer is stored; it ends
        without one when the writer died (the client reconnects, and its next request resumes it)."""
        seen = 0
        while True:
            with self.engine.connect() as conn:  # the lease first: once it is gone, every event is written
                lease = conn.execute(select(LEASES.c.lease_until).where(
                    LEASES.c.message_id == self.message_id)).scalar()
                rows = conn.execute(select(EVENTS.c.seq, EVENTS.c.events).where(
                    EVENTS.c.message_id == self.message_id, EVENTS.c.seq >= seen).order_by(EVENTS.c.seq)).all()
                status = None if lease is not None and lease >= time.time() else conn.execute(
                    select(MESSAGES.c.status).where(MESSAGES.c.id == self.message_id)).scalar()
            for seq, text in rows:
                events = json.loads(text)
                yield from events
                seen = seq + len(events)
            if status is not None or lease is None:
                if status != "pending":
                    yield {"type": "stored", "message_id": self.message_id}
                return
            if not rows:
                yield None
            time.sleep(min(self.poll_s, tick_s))


class SharedRunRegistry(RunRegistry):
    """The run registry of a process among several: a run elsewhere is followed, not started again."""

    def __init__(self, mirror: RunMirror):
        super().__init__()
        self.mirror = mirror

    def new_run(self, message_id: int, ticket=None) -> AnswerRun:
        return MirroredRun(message_id, ticket, self.mirror)

    def get(self, message_id: int):
        return super().get(message_id) or self.mirror.remote(message_id)

    def start(self, app: Flask, runtime, message_id: int, ticket=None):
        if super().get(message_id) is None and not self.mirror.claim(message_id):
            if ticket is not None:
                runtime.queue.finish(ticket)
            return RemoteRun(self.mirror.engine, message_id)  # another process took it a moment ago
        run = super().start(app, runtime, message_id, ticket)
        if isinstance(run, MirroredRun):
            self.mirror.watch(run)
        return run


def install(app: Flask) -> None:
    """Give the app the shared registry when several processes share its database (queue.shared)."""
    from ..extensions import db

    settings = app.config["SETTINGS"]
    if not settings.shared_queue:
        return
    with app.app_context():
        engine = db.engine
    app.extensions["nistchat_runs"] = SharedRunRegistry(RunMirror(engine, settings.queue.lease_s))


def close(app: Flask) -> None:
    """Stop the app's writes to the shared database (`RunMirror.close`); nothing to do without one."""
    runs = app.extensions.get("nistchat_runs")
    if isinstance(runs, SharedRunRegistry):
        runs.mirror.close()

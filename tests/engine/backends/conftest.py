"""Fixtures of the backends' tests: a real OpenAI-compatible server process, of each kind."""
from __future__ import annotations

import pytest

from tests.conftest import MODELS_DIR

# llama-server is compiled from the sdist's llama.cpp sources the first time (several minutes on
# 2 cores, then cached), so its half runs with the slow suite; llama_cpp.server's half is default.
SERVER_KINDS = ["llama_cpp.server", pytest.param("llama-server", marks=pytest.mark.slow)]
LLAMA_SERVER_SLOTS = 2  # its parallel slots in the tests: two answers can be generated at once


@pytest.fixture(scope="session", params=SERVER_KINDS)
def openai_server(request, tmp_path_factory):
    """One real OpenAI-compatible server on the 0.5B weights for the session, on a free loopback
    port: `python -m llama_cpp.server`, and (slow suite) llama.cpp's `llama-server --parallel 2`.
    Tests that stop or kill it start it again before they end."""
    from nistchat.config import GGUF_MODELS
    from tests.openai_server import make_server

    gguf = MODELS_DIR / GGUF_MODELS["qwen2.5-coder-0.5b"]
    if not gguf.exists():
        pytest.skip("0.5B reader not installed (make test installs it)")
    server = make_server(request.param, gguf, tmp_path_factory.mktemp("openai-server") / "server.log",
                         parallel=LLAMA_SERVER_SLOTS)
    with server:
        yield server


QUEUE_STORES = ("memory", "sqlite", "postgresql")


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory):
    """An SQLite file migrated to head once; each test copies it (migrating costs ~1 s)."""
    from tests.conftest import migrate_empty

    path = tmp_path_factory.mktemp("queue-template") / "nistchat.sqlite3"
    migrate_empty(f"sqlite:///{path}")
    return path


@pytest.fixture(params=QUEUE_STORES)
def make_queue(request):
    """make_queue(max_waiting=..., max_waiting_per_owner=..., slots=..., lease_s=...): a reader queue.
    `memory` is one process's ReaderQueue (a new one each call); `sqlite` and `postgresql` are
    SharedReaderQueues over one database, each call another process (its own engine and name)
    on the same ticket table."""
    yield from _queue_factory(request, request.param)


@pytest.fixture(params=QUEUE_STORES[1:])
def make_shared_queue(request):
    """make_queue's shared stores only (SQLite, PostgreSQL); `.url` is the database's."""
    yield from _queue_factory(request, request.param)


def _queue_factory(request, store: str):
    from nistchat.engine.backends.queue import ReaderQueue
    from nistchat.engine.backends.shared_queue import SharedReaderQueue, queue_engine

    if store == "memory":
        def make(max_waiting=12, max_waiting_per_owner=2, slots=1, **_shared):
            return ReaderQueue(max_waiting, max_waiting_per_owner, slots)
        yield make
        return
    made: list = []
    url = _queue_url(request, store)

    def make(max_waiting=12, max_waiting_per_owner=2, slots=1, lease_s=15.0):
        queue = SharedReaderQueue(queue_engine(url), max_waiting, max_waiting_per_owner, slots,
                                  lease_s=lease_s, poll_s=0.02)
        made.append(queue)
        return queue

    make.url = url
    try:
        yield make
    finally:
        for queue in made:
            queue.close()
            queue.engine.dispose()
        if store == "postgresql":
            request.getfixturevalue("postgres").checkin(url.rsplit("/", 1)[-1])


def _queue_url(request, store: str) -> str:
    import shutil

    if store == "sqlite":
        path = request.getfixturevalue("tmp_path") / "nistchat.sqlite3"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    server = request.getfixturevalue("postgres")
    return server.url(server.checkout())

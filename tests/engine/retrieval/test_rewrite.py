"""Query rewriting (HyDE) on the real index, embedder and 0.5B reader: when it runs, how it is
bounded, and what the retriever does with it."""
from __future__ import annotations

import dataclasses
import time

import pytest

from nistchat.engine.retrieval.rewrite import Rewriter, until
from nistchat.engine.backends.queue import ReaderQueue

WEAK = "Who should approve a new system before it goes live?"  # everyday words: a low top cosine
STRONG = "What are the characteristics of trustworthy AI systems?"  # close to the text: a high cosine


@pytest.fixture
def rewriting(runtime, monkeypatch):
    """The session retriever with rewriting on (it is off by default) and a roomy deadline."""
    monkeypatch.setattr(runtime.settings.retrieval.rewrite, "enabled", True)
    monkeypatch.setattr(runtime.settings.retrieval.rewrite, "deadline_s", 120.0)  # this is not about timing
    assert runtime.retriever.config is runtime.settings.retrieval
    return runtime


def test_queue_lends_the_reader_only_when_no_answer_is_using_it():
    queue = ReaderQueue()
    with queue.borrow() as lent:
        assert lent and queue.snapshot()["serving"] == 1
        waiting = queue.take()
        assert not queue.acquire(waiting, timeout=0.05)  # an answer waits while the reader is lent
        with queue.borrow() as again:
            assert not again
    assert queue.snapshot()["serving"] == 0 and queue.acquire(waiting, timeout=1)
    with queue.borrow() as lent:
        assert not lent  # the answer is being served: no rewriting now
    queue.finish(waiting)


def test_rewrite_is_written_by_the_reader_and_stops_at_its_deadline(runtime):
    cfg = runtime.settings.retrieval.rewrite
    roomy = dataclasses.replace(cfg, deadline_s=120.0)  # room for a busy test machine
    full = Rewriter(runtime.models.reader, ReaderQueue())(WEAK, roomy)
    assert len(full.text.split()) > 5 and full.note == "", full
    assert full.status == "done" or full.ms >= 120_000  # max_tokens ends it, unless the machine is swamped
    t = time.perf_counter()
    cut = Rewriter(runtime.models.reader, ReaderQueue())(WEAK, dataclasses.replace(cfg, deadline_s=0.3, max_tokens=400))
    assert cut.status == "deadline" and time.perf_counter() - t < 1.5  # not the 400 tokens it was allowed


def test_a_stream_slow_to_start_is_abandoned_at_the_deadline():
    def slow():
        time.sleep(2)
        yield "late"

    t = time.perf_counter()
    assert until(slow(), time.perf_counter() + 0.2) == ([], "deadline") and time.perf_counter() - t < 1
    assert until(iter(["a", "b"]), time.perf_counter() + 5) == (["a", "b"], "done")


def test_a_busy_reader_skips_the_rewrite_without_waiting(runtime):
    queue = ReaderQueue()
    answer = queue.take()
    assert queue.acquire(answer, timeout=1)
    t = time.perf_counter()
    skipped = Rewriter(runtime.models.reader, queue)(WEAK, runtime.settings.retrieval.rewrite)
    assert skipped.status == "busy" and skipped.text == "" and time.perf_counter() - t < 0.5
    queue.finish(answer)


def test_weak_retrieval_searches_the_rewrite_and_strong_retrieval_does_not(rewriting):
    weak = rewriting.retrieve(WEAK, k=6)
    stage = weak.trace.stage("rewrite")
    assert stage is not None and stage.items[0]["status"] in ("done", "deadline") and stage.items[0]["text"]
    assert 0 < stage.ms <= weak.timings_ms["total"]  # time to sources includes the rewrite
    assert len(stage.items) > 1  # the rewrite's own dense ranking follows its text
    assert any("rewrite_dense" in c["ranks"] for c in weak.trace.stage("fuse").items)
    gate_input = weak.trace.stage("dense").items[0]["score"]
    assert gate_input < rewriting.settings.retrieval.rewrite.below  # the gate still reads the question's own

    strong = rewriting.retrieve(STRONG, k=6)
    assert strong.trace.stage("rewrite").note.startswith("not needed") and strong.trace.stage("rewrite").ms == 0


def test_rewriting_is_off_by_default(runtime):
    assert runtime.settings.retrieval.rewrite.enabled is False
    assert runtime.retrieve(WEAK, k=6).trace.stage("rewrite") is None

"""The second embedder's dense list (engine/index/second.py) on a copy of the tiny real index.

MiniLM stands in for EmbeddingGemma as the second embedder: the mechanism (build in a child
process, progress, cache, the stale check, fusion) does not depend on which model it is, and
EmbeddingGemma's 1.2 GB is not installed for the test suite (`make test` skips it).
"""
from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from nistchat.engine.index import second, second_build
from nistchat.engine.index.second import META_FILE, PROGRESS_FILE, SecondDense, needs_build
from nistchat.engine.index.second_build import build, start_build
from nistchat.engine.retrieval import Retriever
from nistchat.engine.runtime import Runtime

from tests.conftest import MODELS_DIR, make_settings

SECOND = "all-MiniLM-L6-v2"


@pytest.fixture
def data(tiny_data, tmp_path):
    """A private copy of the tiny index (the builds below write beside it)."""
    shutil.copytree(tiny_data / "index", tmp_path / "index")
    return tmp_path


@pytest.fixture(autouse=True)
def look_at_once(monkeypatch):
    monkeypatch.setattr(second, "CHECK_EVERY_S", 0.0)  # look for a finished build on every call


def runtime_over(data, light_runtime, name=SECOND) -> Runtime:
    return Runtime(make_settings(data_dir=data, second_embedder=name), light_runtime.models)


def test_retrieval_works_without_it_and_says_why_until_it_is_built(data, light_runtime):
    rt = runtime_over(data, light_runtime)
    r = rt.retrieve("How are widgets reviewed before release?")
    stage = r.trace.stage("dense2")
    assert stage.items == [] and "not built yet" in stage.note
    assert r.trace.stage("dense").note.endswith(f"depth {rt.settings.retrieval.dense_depth}")  # alone: not deeper
    assert rt.retriever.second.state()["ready"] is False


def test_the_build_writes_vectors_progress_and_a_record_then_its_list_is_fused(data, light_runtime):
    rt = runtime_over(data, light_runtime)
    state = build(data / "index", MODELS_DIR, SECOND, log=lambda *_: None)
    assert state["state"] == "done" and state["done"] == state["total"] == len(rt.index.children)
    assert json.loads((data / "index" / PROGRESS_FILE).read_text())["state"] == "done"
    assert json.loads((data / "index" / META_FILE).read_text())["embedder"] == SECOND
    assert not needs_build(data / "index", MODELS_DIR, SECOND, rt.index)

    r = rt.retrieve("How are widgets reviewed before release?")
    assert r.trace.stage("dense2").items and r.trace.stage("dense2").ms > 0
    deeper = rt.settings.retrieval.depth_with_second
    assert deeper != rt.settings.retrieval.dense_depth
    assert all(r.trace.stage(name).note.endswith(f"depth {deeper}") for name in ("dense", "dense2"))
    assert any("dense2" in c["ranks"] for c in r.trace.stage("fuse").items)
    assert rt.retriever.second.state() == {"embedder": SECOND, "ready": True, "reason": "",
                                           "progress": json.loads((data / "index" / PROGRESS_FILE).read_text())}
    # the same text again: every vector comes from the cache
    again = build(data / "index", MODELS_DIR, SECOND, log=lambda *_: None)
    assert again["state"] == "done"


def test_vectors_for_another_index_are_never_used(data, light_runtime):
    build(data / "index", MODELS_DIR, SECOND, log=lambda *_: None)
    meta = json.loads((data / "index" / META_FILE).read_text())
    (data / "index" / META_FILE).write_text(json.dumps({**meta, "fingerprint": "another corpus"}))
    rt = runtime_over(data, light_runtime)
    assert not rt.retriever.second.available() and "another index" in rt.retriever.second.reason
    assert needs_build(data / "index", MODELS_DIR, SECOND, rt.index)
    assert "dense2" not in {c for item in rt.retrieve("widgets").trace.stage("fuse").items for c in item["ranks"]}


def test_an_embedder_that_is_not_installed_is_named_with_the_command_that_installs_it(data, light_runtime):
    rt = runtime_over(data, light_runtime, name="embeddinggemma-300m")
    missing = SecondDense(rt.index, data / "index", data / "no-models", "embeddinggemma-300m")
    assert not missing.available() and "nistchat models install --embedder embeddinggemma-300m" in missing.reason
    assert not needs_build(data / "index", data / "no-models", "embeddinggemma-300m", rt.index)


def test_serve_builds_it_in_a_low_priority_child_process(data, light_runtime):
    rt = runtime_over(data, light_runtime)
    process = start_build(data / "index", MODELS_DIR, SECOND, rt.index, log=lambda *_: None)
    assert process is not None and os.getpriority(os.PRIO_PROCESS, process.pid) >= 10  # nice: answers go first
    assert process.wait(timeout=300) == 0
    assert start_build(data / "index", MODELS_DIR, SECOND, rt.index, log=lambda *_: None) is None  # done: no rebuild
    deadline = time.monotonic() + 10
    while not rt.retriever.second.available() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert rt.retriever.second.available()


def test_status_shows_whether_it_is_in_use_and_the_build_progress(data, light_runtime, tmp_path):
    from tests.web_support import build_app, login

    rt = runtime_over(data, light_runtime)
    app = build_app(tmp_path / "site", rt)
    client = app.test_client()
    login(client)
    page = client.get("/status").get_data(as_text=True)
    assert f"Second embedder ({SECOND}): not in use yet: not built yet" in page
    (data / "index" / PROGRESS_FILE).write_text(json.dumps({"state": "building", "done": 3, "total": 9}))
    page = client.get("/status").get_data(as_text=True)
    assert "being built: 3 of 9 passages embedded" in page and '<progress max="9" value="3">' in page
    build(data / "index", MODELS_DIR, SECOND, log=lambda *_: None)
    assert client.get("/status?format=json").get_json()["index"]["second"]["ready"] is True
    assert f"Second embedder ({SECOND}): in use" in client.get("/status").get_data(as_text=True)


def test_the_models_command_says_whether_the_second_embedder_is_in_use(data, light_runtime):
    from click.testing import CliRunner

    from nistchat.cli import main

    rt = runtime_over(data, light_runtime)
    out = CliRunner().invoke(main, ["models", "--no-load"], obj=rt)
    assert out.exit_code == 0 and f"second    embedded  {SECOND}" in out.output
    assert "not in use: not built yet" in out.output
    build(data / "index", MODELS_DIR, SECOND, log=lambda *_: None)
    out = CliRunner().invoke(main, ["models", "--no-load", "--json"], obj=rt)
    assert json.loads(out.output)["second_embedder"]["ready"] is True


def test_a_broken_second_model_costs_its_list_not_the_answer(data, light_runtime, monkeypatch):
    build(data / "index", MODELS_DIR, SECOND, log=lambda *_: None)
    rt = runtime_over(data, light_runtime)

    def broken():
        raise OSError("model.safetensors is truncated")

    retriever = Retriever(rt.index, rt.settings, embedder=rt.models.embedder,
                          second=lambda name: SecondDense(rt.index, data / "index", MODELS_DIR, name, embedder=broken))
    r = retriever.retrieve("How are widgets reviewed before release?")
    assert r.passages and "model.safetensors is truncated" in r.trace.stage("dense2").note
    assert "it failed" in retriever.second.reason


def test_the_build_pauses_while_an_answer_holds_the_reader_and_keeps_what_it_did(data, light_runtime, monkeypatch):
    """A web process's flag (engine/background.py) holds the build between batches; lowered, it goes on."""
    import threading

    from nistchat.engine.background import AnswerFlag
    from nistchat.engine.backends.queue import ReaderQueue

    monkeypatch.setattr(second_build, "BATCH", 1)  # the tiny index has few children: pause after the first
    queue = ReaderQueue()
    queue.on_chat_active(AnswerFlag(data / "index").set)
    ticket = queue.take("someone")  # a person's question waits for the reader: the flag is up
    assert AnswerFlag(data / "index").held()
    result: dict = {}
    builder = threading.Thread(target=lambda: result.update(build(data / "index", MODELS_DIR, SECOND,
                                                                  log=lambda *_: None)))
    builder.start()
    try:
        deadline = time.monotonic() + 60
        progress: dict = {}
        while time.monotonic() < deadline and not progress.get("paused"):
            time.sleep(0.05)
            progress = second.read_json(data / "index" / PROGRESS_FILE)
        assert progress.get("paused") and progress["done"] < progress["total"]
        line = SecondDense(None, data / "index", MODELS_DIR, SECOND).progress_line()
        assert "paused while an answer is written" in line
        cache_files = [p for p in data.rglob("*") if p.is_file() and "embcache" in str(p)]
        assert cache_files  # saved before waiting: a restart now keeps the batch already embedded
        time.sleep(0.5)
        assert builder.is_alive()  # still waiting
    finally:
        queue.finish(ticket)  # the answer is done: the flag goes down and the build finishes
        builder.join(60)
    assert result["state"] == "done" and result["paused_s"] >= 0.5
    assert not AnswerFlag(data / "index").held()


def test_a_flag_left_by_a_process_that_died_does_not_hold_the_build(tmp_path):
    from nistchat.engine.background import PREFIX, AnswerFlag

    dead = 2 ** 22 + 12345  # above the default pid_max: no such process
    (tmp_path / f"{PREFIX}{dead}").write_text(str(dead))
    assert not AnswerFlag(tmp_path).held()
    assert not list(tmp_path.glob(f"{PREFIX}*"))
    assert AnswerFlag(tmp_path).wait_while_held(5) < 1

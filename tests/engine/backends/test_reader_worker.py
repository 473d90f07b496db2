"""The reader in its own process, on the real 0.5B weights: a crash, a kill or a hang of the worker
costs one answer, the next one works, and this (the web or CLI) process never loads llama.cpp."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from nistchat.config import GGUF_MODELS
from nistchat.engine.errors import BackendError, Interrupted, TimedOut
from nistchat.engine.backends.select import ModelRegistry
from nistchat.engine.backends.supervisor import ReaderWorker, WorkerReader, describe_exit
from tests.conftest import MODELS_DIR, REPO, make_settings

GGUF = MODELS_DIR / GGUF_MODELS["qwen2.5-coder-0.5b"]
LONG = [{"role": "user", "content": "Write the numbers from one to forty in words, separated by commas."}]
pytestmark = pytest.mark.skipif(not GGUF.exists(), reason="0.5B reader not installed (make test installs it)")


@pytest.fixture
def worker():
    w = ReaderWorker(GGUF, n_ctx=1024)
    yield w
    w.stop()


def test_the_worker_streams_over_ollamas_protocol_from_another_process(worker):
    reader = WorkerReader(worker, timeout_s=60)
    text = "".join(reader.stream([{"role": "user", "content": "Reply with the single word: ready"}], max_tokens=8))
    assert text.strip()
    assert worker.pid not in (None, os.getpid())
    state = worker.state()
    assert state["starts"] == 1 and state["self_test_ms"] > 0
    assert "AMX" not in state["system_info"]  # never by default (it faulted on a VM)
    assert state["variant"] in ("x86-64-v3", "x86-64-v4-vnni", "generic", "unrecorded")
    if state["variant"] == "x86-64-v3":
        assert "AVX512 = 1" not in state["system_info"]
    if state["variant"] == "x86-64-v4-vnni":
        assert "AVX512 = 1" in state["system_info"] and "AVX512_VNNI = 1" in state["system_info"]


def test_sigkill_mid_answer_costs_that_answer_and_the_next_one_works(worker):
    reader = WorkerReader(worker, timeout_s=60)
    pieces = []
    with pytest.raises(Interrupted, match="killed by SIGKILL") as stopped:
        for piece in reader.stream(LONG, max_tokens=120, temperature=0.0):
            pieces.append(piece)
            if len(pieces) == 3:
                os.kill(worker.pid, signal.SIGKILL)
    assert len(pieces) >= 3 and "saved as incomplete" in stopped.value.message
    first_pid = worker.info["pid"]
    text = "".join(reader.stream([{"role": "user", "content": "Reply with the single word: ready"}], max_tokens=8))
    assert text.strip()
    assert worker.starts == 2 and worker.pid != first_pid
    assert worker.state()["last_exit"] == "killed by SIGKILL"


def test_an_answer_cut_off_by_a_restart_says_why_in_the_readers_words(worker):
    """Another call's timeout restarts the worker under this answer: the message said "Ollama
    stopped mid-answer", naming a server that does not run here, and not why."""
    reader = WorkerReader(worker, timeout_s=60)
    with pytest.raises(Interrupted) as stopped:
        for n, _piece in enumerate(reader.stream(LONG, max_tokens=120, temperature=0.0)):
            if n == 2:
                worker.restart("restarted after another answer waited 120 s for its first token")
    assert "Ollama" not in stopped.value.message
    assert "another answer waited 120 s" in stopped.value.message and "saved as incomplete" in stopped.value.message


def test_a_hung_worker_times_out_and_is_replaced(worker):
    reader = WorkerReader(worker, timeout_s=3)
    reader.self_test()
    os.kill(worker.pid, signal.SIGSTOP)  # stands in for a native call that never returns
    t = time.monotonic()
    with pytest.raises(TimedOut):
        list(reader.stream(LONG, max_tokens=20))
    assert time.monotonic() - t < 30
    assert "restarted after it had not started the answer for 3 s" in worker.state()["last_exit"]
    assert "".join(reader.stream([{"role": "user", "content": "Say ok."}], max_tokens=4)).strip()
    assert worker.starts == 2


def test_a_truncated_model_file_fails_the_self_test_without_crashing(tmp_path):
    broken = tmp_path / "truncated.gguf"
    with GGUF.open("rb") as src:
        broken.write_bytes(src.read(2 * 1024 * 1024))
    registry = ModelRegistry(make_settings(tmp_path, gguf=str(broken)))
    result = registry.self_test()
    assert result["state"] == "failed" and result["roles"]["embedder"]["ok"]
    reader = result["roles"]["reader"]
    assert not reader["ok"] and "truncated.gguf" in reader["error"] and reader["fix"]
    # remembered for a short back-off: the next question is told at once instead of reloading
    t = time.monotonic()
    with pytest.raises(BackendError) as again:
        list(registry.get("reader").stream([{"role": "user", "content": "hi"}], max_tokens=2))
    assert "truncated.gguf" in str(again.value) and time.monotonic() - t < 1.0
    assert registry.describe()[2]["worker"]["last_error"]


def test_generation_while_other_threads_embed_and_retrieve(runtime):
    """The pattern that crashed the native build in the web process: one answer generating while
    other requests embed and search. All of it completes and the worker keeps its process."""
    reader = runtime.models.get("reader")
    embedder = runtime.models.get("embedder")
    reader.self_test()
    pid = reader.worker.pid
    done = threading.Event()
    errors: list[BaseException] = []
    counts = {"embed": 0, "retrieve": 0}

    def loop(kind):
        try:
            while not done.is_set():
                if kind == "embed":
                    embedder.embed(["govern map measure manage", "adversarial machine learning"])
                else:
                    runtime.retrieve("How should an organisation monitor a deployed AI system?")
                counts[kind] += 1
        except BaseException as exc:  # noqa: BLE001 - any failure fails the test
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(k,)) for k in ("embed", "retrieve")]
    for t in threads:
        t.start()
    try:
        text = "".join(reader.stream(LONG, max_tokens=60, temperature=0.0))
    finally:
        done.set()
        for t in threads:
            t.join(30)
    assert not errors, errors
    assert text.strip() and counts["embed"] > 0 and counts["retrieve"] > 0
    assert reader.worker.pid == pid


def test_the_web_side_never_imports_llama_cpp(runtime):
    """A fresh interpreter answers through the worker and still has no llama_cpp module loaded."""
    code = ("import sys; from nistchat.engine.backends.select import ModelRegistry; "
            "from tests.conftest import make_settings; r = ModelRegistry(make_settings()); "
            "res = r.self_test(); assert res['state'] == 'passed', res; "
            "assert 'llama_cpp' not in sys.modules; print('ok', res['roles']['reader']['pid'])")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok ")


def test_describe_exit_says_how_a_process_ended():
    assert describe_exit(-9) == "killed by SIGKILL" and describe_exit(3) == "exit status 3"
    assert describe_exit(None) == "still running"


def test_the_thread_count_can_change_between_answers_and_greedy_words_stay_the_same(worker):
    """The reader chooses its threads before each answer (backends/contention.py); llama.cpp splits
    rows across threads, so one or two threads write the same greedy answer."""
    from nistchat.engine.backends.contention import ThreadChooser

    prompt = [{"role": "user", "content": "Name the four functions of the NIST AI RMF core."}]
    one = "".join(WorkerReader(worker, timeout_s=60, threads=ThreadChooser(1)).stream(prompt, max_tokens=12,
                                                                                       temperature=0.0))
    two = "".join(WorkerReader(worker, timeout_s=60, threads=ThreadChooser(2)).stream(prompt, max_tokens=12,
                                                                                       temperature=0.0))
    assert one.strip() and one == two
    assert worker.starts == 1  # the same process: the threads changed inside it


def test_busy_cores_see_another_process_and_leave_out_the_ones_named():
    import subprocess
    import sys

    from nistchat.engine.backends.contention import busy_cores, threads_for

    assert threads_for(2, 0.1) == 2 and threads_for(2, 0.8) == 1 and threads_for(2, 2.0) == 1
    assert threads_for(4, 1.0) == 3 and threads_for(2, None) == 2
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        seen = busy_cores(0.5)
        without = busy_cores(0.5, ignore=[burner.pid])
    finally:
        burner.kill()
        burner.wait()
    assert seen is not None and seen - without > 0.3  # the burner had a good share of a core

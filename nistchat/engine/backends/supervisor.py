"""The web (or CLI) process's side of the reader worker: start it, notice when it dies, restart it.

`ReaderWorker` owns the child process (`python -m nistchat.engine.backends.worker`). `WorkerReader`
is the reader role on top of it: the Ollama client pointed at the worker's port, plus the one
thing a remote Ollama never needs, restarting the process when it crashed or hung. A failed
start is remembered for a short back-off, so a broken model file is reported at once instead of
being reloaded by every question, and retried once the back-off has passed.
"""
from __future__ import annotations

import atexit
import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

from ..errors import BackendError, Interrupted, ModelMissing, TimedOut, Unreachable
from .base import SELF_TEST_MESSAGES
from .contention import ThreadChooser
from .ollama import OllamaReader

START_TIMEOUT_S = 300.0  # a cold page cache on a slow disk; a warm 1.5B start takes ~2 s
RETRY_AFTER_S = 30.0  # after a failed start, questions get the remembered error this long


def describe_exit(code: int | None) -> str:
    """'killed by SIGKILL' / 'exit status 3' for a process's return code."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class ReaderWorker:
    """One worker process for one GGUF file; thread-safe; restarts on demand."""

    def __init__(self, gguf: Path, *, n_ctx: int = 4096, threads: int = 0,
                 start_timeout_s: float = START_TIMEOUT_S, retry_after_s: float = RETRY_AFTER_S):
        self.gguf = Path(gguf)
        self.name = self.gguf.stem
        self.n_ctx, self.threads = n_ctx, threads
        self.start_timeout_s, self.retry_after_s = start_timeout_s, retry_after_s
        self._lock = threading.RLock()
        self._proc: subprocess.Popen | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self.port: int | None = None
        self.info: dict = {}  # the worker's ready line: system_info, self_test_ms, pid
        self.starts = 0
        self.last_exit = ""  # how the previous process ended, in words
        self.last_error: BackendError | None = None
        self._failed_at: float | None = None
        atexit.register(self.stop)

    # -- state
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self.port is not None

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def state(self) -> dict:
        with self._lock:
            retry_in = None
            if self._failed_at is not None:
                retry_in = max(0.0, round(self._failed_at + self.retry_after_s - time.monotonic(), 1))
            return {"pid": self.pid if self.alive() else None, "port": self.port if self.alive() else None,
                    "starts": self.starts, "last_exit": self.last_exit,
                    "last_error": self.last_error.message if self.last_error else "",
                    "retry_in_s": retry_in, "variant": self.info.get("variant", ""),
                    "system_info": self.info.get("system_info", ""),
                    "self_test_ms": self.info.get("self_test_ms")}

    # -- life cycle
    def ensure(self) -> str:
        """The worker's base URL, starting (or restarting) it when it is not running."""
        with self._lock:
            if self.alive():
                return self.host
            if self._proc is not None:  # it was running and has died since
                self.last_exit = describe_exit(self._proc.poll())
                self._proc = None
            if self._failed_at is not None and time.monotonic() - self._failed_at < self.retry_after_s:
                raise self.last_error
            try:
                self._start()
            except BackendError as exc:
                self.last_error, self._failed_at = exc, time.monotonic()
                raise
            self.last_error, self._failed_at = None, None
            return self.host

    def _start(self) -> None:
        if not self.gguf.is_file():
            raise ModelMissing(f"Reader model file not found: {self.gguf}. Run `nistchat models install`.")
        cmd = [sys.executable, "-m", "nistchat.engine.backends.worker", "--gguf", str(self.gguf),
               "--n-ctx", str(self.n_ctx), "--threads", str(self.threads)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.starts += 1
        self.port = None
        self._stderr.clear()
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, text=True, start_new_session=True)
        threading.Thread(target=self._drain, args=(proc.stderr,), daemon=True, name="reader-worker-stderr").start()
        line = self._read_ready(proc)
        if line is None:
            code = proc.wait(timeout=5) if proc.poll() is not None else None
            if code is None:
                proc.kill()
                proc.wait()
                raise TimedOut(f"The reader process did not start within {self.start_timeout_s:.0f} s.")
            raise Unreachable(f"The reader process crashed while loading {self.gguf.name} ({describe_exit(code)})."
                              f"{self._stderr_tail()} The web server is unaffected; "
                              "see docs/operations.md, 'The reader process', for the build's CPU variant.")
        info = json.loads(line)
        if not info.get("ready"):
            proc.wait(timeout=10)
            if info.get("kind") == "variant":
                raise Unreachable(f"The reader process cannot run on this machine: {info.get('error')}")
            raise ModelMissing(f"The reader model {self.gguf.name} could not be loaded: {info.get('error')}. "
                               "Run `nistchat models install` to fetch and check it again.")
        self._proc, self.port, self.info = proc, int(info["port"]), info

    def _read_ready(self, proc: subprocess.Popen) -> str | None:
        """The worker's one JSON status line, or None if it died or stayed silent too long."""
        result: list[str] = []
        reader = threading.Thread(target=lambda: result.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.start_timeout_s)
        line = result[0].strip() if result else ""
        return line if line.startswith("{") else None

    def _drain(self, stream) -> None:
        for line in stream:
            self._stderr.append(line.rstrip())

    def _stderr_tail(self) -> str:
        lines = [ln for ln in list(self._stderr)[-3:] if ln]
        return (" Last output: " + " | ".join(lines)[-400:] + ".") if lines else ""

    def died(self, wait_s: float = 2.0) -> str | None:
        """How the worker ended, if it is not running any more (after a failed call). A killed
        process closes its socket a moment before it can be reaped, so wait briefly for it."""
        with self._lock:
            proc = self._proc
        if proc is None:
            return None
        try:
            return describe_exit(proc.wait(timeout=wait_s))
        except subprocess.TimeoutExpired:
            return None

    def restart(self, why: str) -> None:
        """Stop a worker that hangs or died; the next `ensure()` starts a fresh one."""
        with self._lock:
            if self._proc is not None:
                self.stop()
                self.last_exit = why

    def stop(self) -> None:
        with self._lock:
            proc, self._proc, self.port = self._proc, None, None
        if proc is None or proc.poll() is not None:
            return
        proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass


class WorkerReader:
    """The reader role over a `ReaderWorker`: Ollama's client, plus restart on crash or hang."""

    def __init__(self, worker: ReaderWorker, timeout_s: float = 120.0, max_wait_s: float = 900.0,
                 threads: ThreadChooser | None = None):
        self.worker = worker
        self.name = worker.name
        self.timeout_s, self.max_wait_s = timeout_s, max_wait_s
        self.threads = threads or ThreadChooser(worker.threads)
        self._client: OllamaReader | None = None

    def _reader(self) -> OllamaReader:
        host = self.worker.ensure()
        if self._client is None or self._client.host != host:
            self._client = OllamaReader(host, self.name, self.timeout_s, self.max_wait_s)
        return self._client

    def stream(self, messages: list[dict], *, max_tokens: int = 512, temperature: float = 0.1,
               first_token_s: float | None = None) -> Iterator[str]:
        reader = self._reader()
        first_token_s = first_token_s or self.timeout_s
        got_token = False
        try:
            for piece in reader.stream(messages, max_tokens=max_tokens, temperature=temperature,
                                       first_token_s=first_token_s, threads=self.threads.choose()):
                got_token = True
                yield piece
        except TimedOut as exc:  # the client's words name Ollama; here it is our own process
            waited = self.timeout_s if got_token else first_token_s
            what = "produced nothing more" if got_token else "had not started the answer"
            self.worker.restart(f"restarted after it {what} for {waited:.0f} s")
            raise TimedOut(f"The reader process {what} after {waited:.0f} s (the machine may be "
                           "overloaded); it is being restarted. Please ask again.") from exc
        except BackendError as exc:
            ended = self.worker.died()
            if ended is None and isinstance(exc, Interrupted):
                # restarted under this answer (after another one's timeout), else the connection
                # broke; the client's words would name Ollama, which does not run here
                ended = (not self.worker.alive() and self.worker.last_exit) or None
                if ended is None:
                    raise Interrupted("The reader process broke off the answer; the text so far is saved as "
                                      "incomplete. Please ask again.") from exc
            if ended is None:
                raise type(exc)(f"The reader process failed: {exc.message}") from exc
            raise Interrupted(f"The reader process stopped mid-answer ({ended}). It is being restarted; "
                              "the text so far is saved as incomplete. Please ask again.") from exc

    def self_test(self) -> dict:
        """Start the worker (which generates one token before it says it is ready), then one
        token through the same HTTP path every answer takes."""
        t = time.perf_counter()
        "".join(self.stream(SELF_TEST_MESSAGES, max_tokens=1, temperature=0.0))
        return {"ms": round((time.perf_counter() - t) * 1000, 1), "pid": self.worker.pid,
                "variant": self.worker.info.get("variant", ""), "system_info": self.worker.info.get("system_info", "")}

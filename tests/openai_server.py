"""A real OpenAI-compatible server for the tests: `python -m llama_cpp.server` (llama-cpp-python's
`server` extra) on the 0.5B weights the suite already has, on a free loopback port.

It can be stopped, killed and started again on the same port, so the tests can take it away in
the middle of an answer and bring it back. The API key makes every request prove it sends one.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

MODEL_ALIAS = "qwen2.5-coder-0.5b"  # the id its /v1/models lists
API_KEY = "test-key-not-a-secret"
START_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaCppServer:
    def __init__(self, gguf: Path, log_path: Path, *, n_ctx: int = 2048, threads: int = 2,
                 api_key: str = API_KEY):
        self.gguf, self.log_path, self.n_ctx, self.threads, self.api_key = gguf, log_path, n_ctx, threads, api_key
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf), "--model_alias", MODEL_ALIAS,
                "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads),
                # a second request must wait for the first, not cut it short (llama_cpp.server's default)
                "--interrupt_requests", "False", "--logits_all", "False", "--api_key", self.api_key]

    def start(self) -> "LlamaCppServer":
        if self.running():
            return self
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}; see {self.log_path}")
            try:
                response = httpx.get(f"{self.base_url}/models", timeout=2.0,
                                     headers={"Authorization": f"Bearer {self.api_key}"})
                if response.status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer /v1/models in {START_TIMEOUT_S:.0f} s; see {self.log_path}")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would end it."""
        if self.running():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.running():
            self.proc.terminate()
            try:
                self.proc.wait(5)  # uvicorn waits for a generation still running for a client that left
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def __enter__(self) -> "LlamaCppServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

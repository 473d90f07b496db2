"""Real OpenAI-compatible servers for the tests and the benchmark, on the 0.5B weights the suite
already has, on a free loopback port:

  - `LlamaCppServer`: `python -m llama_cpp.server` (llama-cpp-python's `server` extra): one
    generation at a time;
  - `LlamaServer`: llama.cpp's own `llama-server`, built from the sdist's sources by
    `scripts/build_llama_server.sh` (`llama_server_binary()`), with `--parallel N` slots that batch.

Each can be stopped, killed and started again on the same port, so the tests can take it away in
the middle of an answer and bring it back. The API key makes every request prove it sends one.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

MODEL_ALIAS = "qwen2.5-coder-0.5b"  # the id their /v1/models lists
API_KEY = "test-key-not-a-secret"
START_TIMEOUT_S = 120.0
ROOT = Path(__file__).resolve().parents[1]
KINDS = ("llama_cpp.server", "llama-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def llama_server_binary(python: str = sys.executable) -> Path:
    """The cached `llama-server` for this CPU's variant, built first if there is none (minutes)."""
    done = subprocess.run(["bash", str(ROOT / "scripts" / "build_llama_server.sh"), python],
                          stdout=subprocess.PIPE, text=True, check=True)
    return Path(done.stdout.strip().splitlines()[-1])


class ServerProcess:
    """One server process's life: start (wait until `/v1/models` answers), stop, kill, restart."""
    kind = ""

    def __init__(self, gguf: Path, log_path: Path, *, n_ctx: int = 2048, threads: int = 2, api_key: str = API_KEY):
        self.gguf, self.log_path, self.n_ctx, self.threads, self.api_key = gguf, log_path, n_ctx, threads, api_key
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> "ServerProcess":
        if self.running():
            return self
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self.proc.returncode}; see {self.log_path}")
            try:  # llama-server answers 503 while it loads the model
                response = httpx.get(f"{self.base_url}/models", timeout=2.0,
                                     headers={"Authorization": f"Bearer {self.api_key}"})
                if response.status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.kind} did not answer /v1/models in {START_TIMEOUT_S:.0f} s; see {self.log_path}")

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

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class LlamaCppServer(ServerProcess):
    kind = "llama_cpp.server"
    parallel = 1  # one lock around its model

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf), "--model_alias", MODEL_ALIAS,
                "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads),
                # a second request must wait for the first, not cut it short (llama_cpp.server's default)
                "--interrupt_requests", "False", "--logits_all", "False", "--api_key", self.api_key]


class LlamaServer(ServerProcess):
    """`llama-server --parallel N`: N slots generating at once, batched into one decode per step.
    `n_ctx` is each slot's context (the server divides `--ctx-size` among its slots)."""
    kind = "llama-server"

    def __init__(self, binary: Path, gguf: Path, log_path: Path, *, parallel: int = 1, **kwargs):
        super().__init__(gguf, log_path, **kwargs)
        self.binary, self.parallel = binary, parallel

    def command(self) -> list[str]:
        return [str(self.binary), "--model", str(self.gguf), "--alias", MODEL_ALIAS,
                "--host", "127.0.0.1", "--port", str(self.port), "--ctx-size", str(self.n_ctx * self.parallel),
                "--parallel", str(self.parallel), "--threads", str(self.threads),
                "--threads-batch", str(self.threads), "--api-key", self.api_key, "--metrics", "--no-webui"]

    def metrics(self) -> dict[str, float]:
        """Its Prometheus counters and gauges (`--metrics`), by name without the `llamacpp:` prefix."""
        response = httpx.get(f"{self.root_url}/metrics", timeout=10.0,
                             headers={"Authorization": f"Bearer {self.api_key}"})
        response.raise_for_status()
        values = {}
        for line in response.text.splitlines():
            found = re.match(r"^llamacpp:(\w+)(?:\{[^}]*\})?\s+(\S+)$", line)
            if found:
                values[found.group(1)] = float(found.group(2))
        return values


def make_server(kind: str, gguf: Path, log_path: Path, *, parallel: int = 1, **kwargs) -> ServerProcess:
    """A server of `kind` (one of KINDS), not started; `llama-server` is built first if needed."""
    if kind == "llama-server":
        return LlamaServer(llama_server_binary(), gguf, log_path, parallel=parallel, **kwargs)
    if kind == "llama_cpp.server":
        return LlamaCppServer(gguf, log_path, **kwargs)
    raise ValueError(f"unknown server kind {kind!r}; known: {', '.join(KINDS)}")

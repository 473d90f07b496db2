"""The reader worker: llama.cpp in a process of its own, speaking a subset of Ollama's HTTP API.

Why a separate process: a native fault (an illegal instruction, an out-of-memory kill, a hang in
a kernel) then costs one answer, not the web server and every user's page with it. Why Ollama's
protocol: the web process talks to this worker with the same client (`ollama.OllamaReader`) as
to a production Ollama server, so both paths share one client and one set of error mappings.

Served on 127.0.0.1 only: `GET /api/version`, `GET /api/tags`, `POST /api/chat` (NDJSON stream or
one object) and `POST /api/generate`. Options read: temperature, num_predict, top_p,
repeat_penalty (Ollama's defaults 0.9 and 1.1 when absent, as in `LlamaCppReader.SAMPLING`).

Start-up protocol (read by `supervisor.ReaderWorker`): the worker loads the model, runs a
one-token generation (the self-test), then prints one JSON line to stdout,
`{"ready": true, "port": N, "variant": "x86-64-v4-vnni", "system_info": "...", "self_test_ms": ...}`,
or `{"ready": false, "error": "..."}` and exits 3. Before llama.cpp is imported, the build's
variant record is checked against this CPU (`cpu_variant.check_installed`): a build for CPU
features this machine lacks stops with a plain "rebuild" message instead of an illegal
instruction. It exits by itself when its standard input closes, so it never outlives the
process that started it.

    python -m nistchat.engine.backends.worker --gguf MODEL.gguf [--n-ctx 4096] [--threads 0]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from .base import SELF_TEST_MESSAGES
from .cpu_variant import VariantError, check_installed



def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class Worker:
    """One in-process llama.cpp reader behind the HTTP handler."""

    def __init__(self, gguf: Path, n_ctx: int, threads: int):
        self.variant = check_installed()  # before llama_cpp is imported: raises VariantError, in words
        from llama_cpp import llama_print_system_info

        from .embedded import LlamaCppReader

        self.reader = LlamaCppReader(gguf, n_ctx=n_ctx, threads=threads, timeout_s=float("inf"))
        self.name = self.reader.name
        self.system_info = llama_print_system_info().decode(errors="replace").strip()

    def chat(self, messages: list[dict], options: dict):
        """Text pieces of one chat completion (greedy when temperature is 0); the client bounds stalls.
        `num_thread` (Ollama's option) sets llama.cpp's threads from this call on."""
        if options.get("num_thread"):
            self.reader.set_threads(int(options["num_thread"]))
        sampling = {k: options[k] for k in self.reader.SAMPLING if k in options}
        return self.reader.stream(messages, max_tokens=int(options.get("num_predict", 512)),
                                  temperature=float(options.get("temperature", 0.8)), **sampling)


def _handler(worker: Worker):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # the supervisor keeps stderr for errors only
            pass

        def end_headers(self):
            # One request per connection: the server handles one connection at a time, so a client
            # keeping its connection alive between calls would shut every other client out.
            self.send_header("Connection", "close")
            self.close_connection = True
            super().end_headers()

        def _json(self, status: int, obj: dict) -> None:
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _chunk(self, obj: dict) -> None:
            data = (json.dumps(obj) + "\n").encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def do_GET(self):
            if self.path == "/api/version":
                self._json(200, {"version": "nistchat-worker"})
            elif self.path == "/api/tags":
                self._json(200, {"models": [{"name": worker.name, "model": worker.name, "modified_at": _now(),
                                             "size": 0, "digest": "", "details": {"format": "gguf"}}]})
            else:
                self._json(404, {"error": f"no route {self.path}"})

        def do_POST(self):
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            except ValueError:
                return self._json(400, {"error": "body is not JSON"})
            endpoint = self.path.rsplit("/", 1)[-1]
            if endpoint not in ("chat", "generate"):
                return self._json(404, {"error": f"no route {self.path}"})
            model = body.get("model", "")
            if model not in (worker.name, f"{worker.name}:latest"):
                return self._json(404, {"error": f"model '{model}' not found"})
            if endpoint == "chat":
                messages = body.get("messages") or []
            else:
                messages = [{"role": "user", "content": body.get("prompt", "")}]
                if body.get("system"):
                    messages.insert(0, {"role": "system", "content": body["system"]})
            self._answer(endpoint, model, messages, body.get("options") or {}, body.get("stream", True))

        def _answer(self, endpoint: str, model: str, messages: list[dict], options: dict, stream: bool) -> None:
            started = time.perf_counter_ns()

            def shape(text: str, done: bool) -> dict:
                out = {"model": model, "created_at": _now(), "done": done}
                if endpoint == "chat":
                    out["message"] = {"role": "assistant", "content": text}
                else:
                    out["response"] = text
                if done:
                    out.update(done_reason="stop", total_duration=time.perf_counter_ns() - started)
                return out

            if not stream:
                try:
                    text = "".join(worker.chat(messages, options))
                except Exception as exc:  # a Python-level failure of llama.cpp: an Ollama-style error
                    return self._json(500, {"error": f"generation failed: {exc}"})
                return self._json(200, shape(text, True))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for piece in worker.chat(messages, options):
                    self._chunk(shape(piece, False))
                self._chunk(shape("", True))
            except (BrokenPipeError, ConnectionResetError):
                return  # the client went away; the lock is released when the generator closes
            except Exception as exc:
                self._chunk({"error": f"generation failed: {exc}"})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def _exit_when_parent_goes(stdin) -> None:
    """The supervisor holds our stdin open; EOF means it has gone, so we go too."""
    try:
        while stdin.read(1024):
            pass
    finally:
        os._exit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", required=True, type=Path)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)

    def report(obj: dict) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    threading.Thread(target=_exit_when_parent_goes, args=(sys.stdin.buffer,), daemon=True).start()
    try:
        if not args.gguf.is_file():
            raise FileNotFoundError(f"reader model file not found: {args.gguf}")
        worker = Worker(args.gguf, args.n_ctx, args.threads)
        t = time.perf_counter()
        "".join(worker.chat(SELF_TEST_MESSAGES, {"num_predict": 1, "temperature": 0.0}))
        self_test_ms = round((time.perf_counter() - t) * 1000, 1)
    except VariantError as exc:  # the build cannot run on this CPU: no model file is at fault
        report({"ready": False, "kind": "variant", "error": str(exc)})
        return 3
    except Exception as exc:  # llama.cpp reports a bad file as ValueError; report it, then stop
        report({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return 3
    # One request at a time, on the main thread: llama.cpp generates markedly slower when driven
    # from another thread, and one model serves one generation at a time anyway. Callers queue in
    # the backlog (docs/decisions.md, "The reader in a worker process").
    server = HTTPServer(("127.0.0.1", args.port), _handler(worker))
    report({"ready": True, "port": server.server_address[1], "pid": os.getpid(), "model": worker.name,
            "variant": worker.variant, "system_info": worker.system_info, "self_test_ms": self_test_ms})
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())

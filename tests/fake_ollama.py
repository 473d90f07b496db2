"""FakeOllamaServer: a test fake standing in for an Ollama server, which cannot run here.

It speaks Ollama's documented HTTP API as the real `ollama` client uses it: `GET /api/tags`,
`POST /api/chat` (NDJSON stream or one object), `POST /api/generate`, `POST /api/embed`, and
`{"error": "model ... not found"}` with 404 for unknown models. Knobs let tests make it slow
or drop the connection mid-stream.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


class FakeOllamaServer:
    def __init__(self, models=("qwen2.5:3b", "bespoke-minicheck:latest", "bge-m3:latest"),
                 reply="The AI RMF has four functions: GOVERN, MAP, MEASURE and MANAGE [1].",
                 verdict="Yes", embed_dim=8):
        self.models = list(models)
        self.reply = reply
        self.verdict = verdict
        self.embed_dim = embed_dim
        self.delay_s = 0.0  # sleep before answering (to provoke timeouts)
        self.drop_after_chunks: int | None = None  # close the connection mid-stream
        self.stall_after_chunks: tuple[int, float] | None = None  # (n, s): after n chunks, go silent s seconds
        self.requests: list[tuple[str, dict]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def _has(self, model: str) -> bool:
        return model in self.models or f"{model}:latest" in self.models

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, status: int, obj: dict) -> None:
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path == "/api/tags":
                    fake.requests.append(("tags", {}))
                    self._json(200, {"models": [
                        {"name": m, "model": m, "modified_at": "2026-01-01T00:00:00Z", "size": 1,
                         "digest": "0" * 64, "details": {"format": "gguf", "family": "qwen2"}}
                        for m in fake.models]})
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                endpoint = self.path.rsplit("/", 1)[-1]
                fake.requests.append((endpoint, body))
                model = body.get("model", "")
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                if not fake._has(model):
                    self._json(404, {"error": f"model \"{model}\" not found, try pulling it first"})
                elif endpoint == "chat":
                    if not isinstance(body.get("messages"), list):
                        self._json(400, {"error": "messages must be a list"})
                    else:
                        self._chat(model, body.get("stream", True))
                elif endpoint == "generate":
                    self._json(200, {"model": model, "created_at": "2026-01-01T00:00:00Z",
                                     "response": fake.verdict, "done": True, "done_reason": "stop"})
                elif endpoint == "embed":
                    inputs = body.get("input")
                    inputs = [inputs] if isinstance(inputs, str) else inputs
                    vectors = [self._vector(t) for t in inputs]
                    self._json(200, {"model": model, "embeddings": vectors})
                else:
                    self._json(404, {"error": "not found"})

            def _vector(self, text: str) -> list[float]:
                rng = np.random.default_rng(abs(hash(text)) % (2 ** 32))
                return rng.normal(size=fake.embed_dim).round(6).tolist()

            def _chat(self, model: str, stream: bool) -> None:
                words = fake.reply.split(" ")
                pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
                if not stream:
                    self._json(200, {"model": model, "created_at": "2026-01-01T00:00:00Z",
                                     "message": {"role": "assistant", "content": fake.reply},
                                     "done": True, "done_reason": "stop"})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for i, piece in enumerate(pieces):
                    if fake.drop_after_chunks is not None and i >= fake.drop_after_chunks:
                        self.wfile.flush()
                        self.connection.shutdown(2)  # abrupt close, mid-stream
                        self.close_connection = True
                        return
                    if fake.stall_after_chunks is not None and i == fake.stall_after_chunks[0]:
                        time.sleep(fake.stall_after_chunks[1])
                    self._chunk({"model": model, "created_at": "2026-01-01T00:00:00Z",
                                 "message": {"role": "assistant", "content": piece}, "done": False})
                self._chunk({"model": model, "created_at": "2026-01-01T00:00:00Z",
                             "message": {"role": "assistant", "content": ""}, "done": True,
                             "done_reason": "stop", "eval_count": len(pieces)})
                self.wfile.write(b"0\r\n\r\n")

            def _chunk(self, obj: dict) -> None:
                data = (json.dumps(obj) + "\n").encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

        return Handler

"""Backends served by an Ollama server through the official `ollama` client.

Every transport failure is turned into a typed BackendError so no caller sees httpx internals.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import httpx
import numpy as np
import ollama

from ..errors import BackendError, Interrupted, ModelMissing, TimedOut, Unreachable
from .base import minicheck_prompt, paced, parse_yes_no


@contextlib.contextmanager
def _typed_errors(host: str, model: str):
    try:
        yield
    except BackendError:
        raise
    except ollama.ResponseError as exc:
        if exc.status_code == 404 or "not found" in str(exc.error).lower():
            raise ModelMissing(f"Ollama at {host} has no model {model!r}. Run `ollama pull {model}`.") from None
        raise Unreachable(f"Ollama at {host} answered with an error: {exc.error}") from None
    except httpx.TimeoutException:
        raise TimedOut(f"Ollama at {host} did not answer in time (model {model}).") from None
    except (httpx.TransportError, ConnectionError) as exc:
        raise Unreachable(f"Ollama is not reachable at {host} ({exc.__class__.__name__}). "
                          "Start it with `ollama serve`, or set NISTCHAT_BACKEND=embedded.") from None


def make_client(host: str, timeout_s: float) -> ollama.Client:
    return ollama.Client(host=host, timeout=timeout_s)


def list_models(host: str, timeout_s: float = 2.0) -> list[str]:
    """Names the server has (e.g. 'qwen2.5:3b'); raises Unreachable when it does not answer."""
    with _typed_errors(host, "-"):
        listing = make_client(host, timeout_s).list()
    return [m.model for m in listing.models]


def has_model(available: list[str], model: str) -> bool:
    """Ollama reports 'name:latest' for a model pulled as 'name'."""
    wanted = model if ":" in model else f"{model}:latest"
    return wanted in available or model in available


class OllamaReader:
    """`timeout_s` bounds a stall between two tokens; the wait for the first one is the caller's
    `first_token_s` (the prompt's reading time, `base.Pace`), at most `max_wait_s`."""

    def __init__(self, host: str, model: str, timeout_s: float = 120.0, max_wait_s: float = 900.0):
        self.host, self.name, self.timeout_s = host, model, timeout_s
        self._client = make_client(host, max(timeout_s, max_wait_s))  # `paced` enforces the real limits

    def stream(self, messages: list[dict], *, max_tokens: int = 512, temperature: float = 0.1,
               first_token_s: float | None = None, threads: int | None = None) -> Iterator[str]:
        """`threads` is Ollama's `num_thread` option (the reader worker honours it too)."""
        def timed_out(first: bool, waited: float) -> TimedOut:
            what = "did not start its answer" if first else "stopped producing tokens"
            return TimedOut(f"Ollama at {self.host} {what} within {waited:.0f} s (model {self.name}).")

        options = {"temperature": temperature, "num_predict": max_tokens, **({"num_thread": threads} if threads else {})}
        yield from paced(self._pieces(messages, options),
                         first_token_s=first_token_s or self.timeout_s, stall_s=self.timeout_s,
                         on_timeout=timed_out)

    def _pieces(self, messages: list[dict], options: dict) -> Iterator[str]:
        started = False
        with _typed_errors(self.host, self.name):
            try:
                for chunk in self._client.chat(model=self.name, messages=messages, stream=True, options=options):
                    piece = chunk.message.content or ""
                    if piece:
                        started = True
                        yield piece
            except (httpx.TransportError, ConnectionError) as exc:
                if started:
                    raise Interrupted(f"Ollama stopped mid-answer ({exc.__class__.__name__}).") from None
                raise


class OllamaVerifier:
    """bespoke-minicheck: answers Yes or No to "Document: … Claim: …"."""

    def __init__(self, host: str, model: str, timeout_s: float = 60.0):
        self.host, self.name = host, model
        self._client = make_client(host, timeout_s)

    def check(self, document: str, claim: str) -> bool:
        with _typed_errors(self.host, self.name):
            reply = self._client.generate(model=self.name, prompt=minicheck_prompt(document, claim),
                                          options={"temperature": 0.0, "num_predict": 3})
        return parse_yes_no(reply.response)


class OllamaEmbedder:
    def __init__(self, host: str, model: str, timeout_s: float = 60.0):
        self.host, self.name = host, model
        self._client = make_client(host, timeout_s)
        self.dim = int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: list[str], *, batch_size: int = 32, show_progress: bool = False) -> np.ndarray:
        rows = []
        with _typed_errors(self.host, self.name):
            for i in range(0, len(texts), batch_size):
                rows.extend(self._client.embed(model=self.name, input=texts[i:i + batch_size]).embeddings)
        vectors = np.asarray(rows, dtype="float32")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def embed_query(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)

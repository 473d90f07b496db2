"""In-process backends: sentence-transformers embedder and cross-encoder, llama.cpp reader,
and the reader used as a MiniCheck-style Yes/No judge when no verifier model exists.

Weights are only ever read from local paths: nothing here may reach a model hub at run time.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import Interrupted, ModelMissing, TimedOut, Unreachable
from .base import in_prompt_messages, minicheck_prompt, parse_yes_no
from .cpu_variant import VariantError, check_installed

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _require_dir(path: Path, what: str, hint: str = "Run `nistchat models install`.") -> Path:
    if not (path.is_dir() and any(path.iterdir())):
        raise ModelMissing(f"{what} not found at {path}. {hint}")
    return path


def limit_torch_threads(threads: int) -> None:
    """Embed with `threads` torch threads (0: leave torch's default, all cores).

    Why one for questions: llama.cpp's threads spin on the same cores while an answer is written,
    and two torch threads then wait on each other, many times slower than one thread
    (docs/decisions.md, "One torch thread for questions"). torch's setting is per process, so the
    CLI's ingest sets it back."""
    if threads:
        import torch

        torch.set_num_threads(threads)


class SentenceTransformerEmbedder:
    def __init__(self, path: Path, name: str | None = None):
        from sentence_transformers import SentenceTransformer

        self.path = _require_dir(Path(path), "Embedding model")
        self.name = name or self.path.name
        self._model = SentenceTransformer(str(self.path), device="cpu")
        self.dim = int(self._model.get_embedding_dimension()
                       if hasattr(self._model, "get_embedding_dimension")
                       else self._model.get_sentence_embedding_dimension())
        self._lock = threading.Lock()

    def embed(self, texts: list[str], *, batch_size: int = 32, show_progress: bool = False) -> np.ndarray:
        return self._encode(self._model.encode_document, texts, batch_size, show_progress)

    def embed_query(self, texts: list[str]) -> np.ndarray:
        return self._encode(self._model.encode_query, texts, 32, False)

    def _encode(self, encode, texts: list[str], batch_size: int, show_progress: bool) -> np.ndarray:
        """A model without prompts (MiniLM) encodes both sides alike; one with them (EmbeddingGemma)
        prefixes its own query and document prompts."""
        with self._lock:
            vectors = encode(list(texts), batch_size=batch_size, show_progress_bar=show_progress,
                             normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(vectors, dtype="float32").reshape(len(texts), self.dim)


class CrossEncoderReranker:
    """sentence-transformers CrossEncoder over a local checkpoint (ms-marco-MiniLM-L-6-v2 by default)."""

    def __init__(self, path: Path, name: str | None = None):
        from sentence_transformers import CrossEncoder

        self.path = _require_dir(Path(path), "Cross-encoder reranker",
                                 "It has no offline package: `nistchat models install --online` fetches it where "
                                 "there is internet, or set NISTCHAT_RERANKER to a local CrossEncoder folder.")
        self.name = name or self.path.name
        self._model = CrossEncoder(str(self.path), device="cpu", max_length=512)
        self._lock = threading.Lock()

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        with self._lock:
            scores = self._model.predict([(query, t) for t in texts], batch_size=32, show_progress_bar=False)
        return [float(s) for s in np.asarray(scores).reshape(len(texts))]


class LlamaCppReader:
    """llama.cpp over a GGUF file, streaming chat completions. The reader worker runs this in a
    process of its own (`worker.py`); in-process use is for the CLI's `reader_process = "inprocess"`
    and for measuring what the worker costs. Calls are serialised: a llama.cpp context is not
    thread-safe, and the answer queue (`engine/backends/queue.py`) orders the callers."""

    SAMPLING = {"top_p": 0.9, "repeat_penalty": 1.1}  # Ollama's defaults, so both backends sample alike

    def __init__(self, gguf: Path, *, n_ctx: int = 4096, threads: int = 0, timeout_s: float = 120.0):
        gguf = Path(gguf)
        if not gguf.is_file():
            raise ModelMissing(f"Reader model file not found: {gguf}. Run `nistchat models install`.")
        try:
            check_installed()  # a build for CPU features this machine lacks would die of SIGILL
        except VariantError as exc:
            raise Unreachable(str(exc)) from None
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ModelMissing("llama-cpp-python is not installed (pip install 'nistchat[embedded]').") from None
        self.path = gguf
        self.name = gguf.stem
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self.threads = threads or os.cpu_count() or 2
        self._llm = Llama(model_path=str(gguf), n_ctx=n_ctx, n_threads=self.threads, n_threads_batch=self.threads,
                          verbose=False)

    def set_threads(self, threads: int) -> None:
        """Generate and read prompts with `threads` threads from the next call on (fewer when other
        processes keep cores busy: backends/contention.py)."""
        threads = max(1, threads)
        with self._lock:
            if threads != self.threads:
                self._llm._ctx.set_n_threads(threads, threads)
                self.threads = threads

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False))

    def stream(self, messages: list[dict], *, max_tokens: int = 512, temperature: float = 0.1,
               first_token_s: float | None = None, **sampling) -> Iterator[str]:
        """Yield text pieces. `first_token_s` (default `timeout_s`) bounds the wait for the first
        token and `timeout_s` a stall between two, not the whole answer: a long answer that keeps
        coming is never cut off. In-process, a limit is checked when a token arrives."""
        with self._lock:
            waiting_since = time.monotonic()
            limit = first_token_s or self.timeout_s
            try:
                chunks = self._llm.create_chat_completion(messages=messages, stream=True, max_tokens=max_tokens,
                                                          temperature=temperature, **{**self.SAMPLING, **sampling})
                for chunk in chunks:
                    if time.monotonic() - waiting_since > limit:
                        raise TimedOut(f"The reader produced nothing for {limit:.0f} s.")
                    piece = chunk["choices"][0]["delta"].get("content") or ""
                    if piece:
                        limit = self.timeout_s
                        yield piece
                    waiting_since = time.monotonic()
            except (TimedOut, GeneratorExit):
                raise
            except Exception as exc:  # llama.cpp failures arrive as plain exceptions
                raise Interrupted(f"The reader stopped mid-answer: {exc}") from exc


class ReaderJudgeVerifier:
    """The reader answering MiniCheck's "Document: … Claim: …" prompt with Yes or No."""

    SYSTEM = ("You check facts. Reply Yes if the claim is fully supported by the document, "
              "otherwise reply No. Reply with one word.")

    def __init__(self, reader, *, judges_in_prompt: bool = False):
        self.reader, self.judges_in_prompt = reader, judges_in_prompt
        self.name = f"{reader.name} (as Yes/No judge)"

    def check(self, document: str, claim: str) -> bool:
        messages = [{"role": "system", "content": self.SYSTEM},
                    {"role": "user", "content": minicheck_prompt(document, claim)}]
        return self._ask(messages)

    def check_in_prompt(self, messages: list[dict], number: int, claim: str) -> bool:
        """`AnswerJudge`: the same reader, asked inside the answer's prompt (verify.context = "answer")."""
        return self._ask(in_prompt_messages(messages, number, claim))

    def _ask(self, messages: list[dict]) -> bool:
        return parse_yes_no("".join(self.reader.stream(messages, max_tokens=3, temperature=0.0)))

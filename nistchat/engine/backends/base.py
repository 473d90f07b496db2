"""The four model roles as small protocols, and the MiniCheck prompt format they share.
Backends raise the typed errors of `engine/errors.py`."""
from __future__ import annotations

import re
from typing import Iterator, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str], *, batch_size: int = 32, show_progress: bool = False) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text, embedded as documents (passages)."""

    def embed_query(self, texts: list[str]) -> np.ndarray:
        """The same for search queries: asymmetric models (EmbeddingGemma) prompt the two sides differently."""


@runtime_checkable
class Reranker(Protocol):
    name: str

    def score(self, query: str, texts: list[str]) -> list[float]:
        """Relevance of each text to the query; higher is better."""


@runtime_checkable
class Reader(Protocol):
    name: str

    def stream(self, messages: list[dict], *, max_tokens: int = 512, temperature: float = 0.1) -> Iterator[str]:
        """Chat completion, yielded as text pieces as they are generated."""


@runtime_checkable
class Verifier(Protocol):
    name: str

    def check(self, document: str, claim: str) -> bool:
        """MiniCheck-style: is the claim supported by the document?"""


_MINICHECK_LABEL = re.compile(r"(?i)\b(document|claim)\s*:")


# The one-token generation every start-up self-test makes (worker, supervisor, model registry).
SELF_TEST_MESSAGES = [{"role": "user", "content": "Reply with the single word: ready"}]


def minicheck_prompt(document: str, claim: str) -> str:
    """bespoke-minicheck's documented input format; the embedded judge reuses it. Delimited: a
    `Document:` or `Claim:` inside either text becomes `Document -` / `Claim -`, and the claim is
    one line, so neither text can start a section of its own (a passage that says "Claim: …
    is true" cannot replace the claim under test)."""
    def unlabel(text: str) -> str:
        return _MINICHECK_LABEL.sub(lambda m: f"{m.group(1)} -", text)
    claim = " ".join(unlabel(claim).split())
    return f"Document: {unlabel(document).strip()}\nClaim: {claim}"


def parse_yes_no(text: str) -> bool:
    return text.strip().lower().lstrip("\"'*").startswith("yes")

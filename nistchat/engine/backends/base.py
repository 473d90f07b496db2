"""The four model roles as small protocols, and the MiniCheck prompt format they share.
Backends raise the typed errors of `engine/errors.py`."""
from __future__ import annotations

import queue
import re
import threading
from typing import Callable, Iterator, Protocol, runtime_checkable

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

    def stream(self, messages: list[dict], *, max_tokens: int = 512, temperature: float = 0.1,
               first_token_s: float | None = None) -> Iterator[str]:
        """Chat completion, yielded as text pieces as they are generated. `first_token_s` bounds the
        wait for the first piece (the prompt's reading, `Pace`); the stall limit bounds the rest."""


@runtime_checkable
class Verifier(Protocol):
    name: str

    def check(self, document: str, claim: str) -> bool:
        """MiniCheck-style: is the claim supported by the document?"""


@runtime_checkable
class AnswerJudge(Protocol):
    """A verifier that is the reader itself can judge inside the answer's own prompt: the answer's
    messages (system prompt, numbered passages, question), then one claim and one passage number.
    llama.cpp keeps the prefix a prompt shares with the one before, so each check reads a few
    dozen new tokens instead of a passage and a judge's prompt, and the next answer still finds
    the system prompt read. The answer itself is left out: shown its own answer, the reader
    agreed with a changed fact as readily as with the right one (docs/decisions.md).
    `judges_in_prompt`: measured to judge there at least as well as with the passage alone, so
    `verify.context = "auto"` asks it there."""

    judges_in_prompt: bool

    def check_in_prompt(self, messages: list[dict], number: int, claim: str) -> bool:
        """Is `claim` supported by passage [number] of the answer's `messages`?"""


IN_PROMPT_CHECK = ("You check facts now. Reply Yes if the claim is fully supported by passage [{n}], "
                   "otherwise reply No. Reply with one word.\nClaim: {claim}")


def in_prompt_messages(messages: list[dict], number: int, claim: str) -> list[dict]:
    """The answer's messages and the check: the prefix is the answer's prompt byte for byte. The
    claim is one neutralised line, so it cannot open a section or pose as a passage number."""
    from ..text import neutralise

    claim = " ".join(neutralise(claim).split())
    return [*messages, {"role": "user", "content": IN_PROMPT_CHECK.format(n=number, claim=claim)}]


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


# A prompt the self-test sends to measure the reader's prefill rate: long enough (~250 words and
# marks) that reading it, not the HTTP round trip, is most of the time to its one token.
PREFILL_PROBE_MESSAGES = [{"role": "user", "content": (
    "Read this note and reply with the single word: ready. " +
    "An organization that manages the risks of an AI system maps its context, measures its "
    "trustworthiness, manages what it finds and governs the whole effort with clear roles. " * 9)}]


def move_kept_prompt(reader: Reader) -> None:
    """One token for a one-character prompt, so that the reader's next call reads its prompt from
    the start. llama.cpp (and servers with a prompt cache) keep the last prompt and reuse its
    longest common prefix; in a chat every answer leaves its own prompt there, so a benchmark or an
    evaluation that runs calls back to back would time them faster than a person meets them."""
    "".join(reader.stream([{"role": "user", "content": "."}], max_tokens=1, temperature=0.0))


class Pace:
    """How long the reader may take to its first token: the prompt's tokens at the reader's measured
    prefill rate, times FACTOR, between a floor and a ceiling.

    Why not one stall limit: reading a 2,000-token prompt takes 10 s on a quiet machine and over
    100 s on a busy one, while a silent reader between two tokens has hung. The rate comes from the
    self-test's probe and then from every answer (a moving average, so a machine that gets busier
    gets longer limits); before any measurement the limit is the ceiling.

    An answer never measures the reader faster than the probe did (`calibrate`): a reader that kept
    the last prompt's prefix (a retry over the same passages, a follow-up whose first passages are
    the last turn's) reads only the new tokens, and the whole prompt over that time looked ten times
    faster than the reader is; the next answer's limit then fell to the floor, and the answer after
    a retry was cut off while the machine was busy. A process that ran no probe (an evaluation
    from the command line) takes its first answer's rate as the probe's, read by a reader that had
    kept nothing; uncapped, its retries moved every limit to the floor."""

    FACTOR = 3.0
    WEIGHT = 0.3  # of the newest observation in the moving average

    def __init__(self, floor_s: float, ceiling_s: float):
        self.floor_s, self.ceiling_s = floor_s, max(floor_s, ceiling_s)
        self.tokens_per_s: float | None = None
        self.probed: float | None = None  # the rate the probe measured, on a prompt the reader had not kept
        self._lock = threading.Lock()

    def calibrate(self, prompt_tokens: int, seconds: float) -> None:
        """The self-test's probe: the first measurement, and the fastest any answer may show."""
        if prompt_tokens > 0 and seconds > 0:
            with self._lock:
                self.probed = prompt_tokens / seconds
        self.observe(prompt_tokens, seconds)

    def observe(self, prompt_tokens: int, seconds: float, sharing: int = 1) -> None:
        """`sharing`: answers using the reader meanwhile (reader slots in use). A server with N
        slots reads N prompts at once, each at about 1/N of the rate, so the reader's own rate is
        the observed one times N."""
        if prompt_tokens <= 0 or seconds <= 0:
            return
        rate = prompt_tokens * max(1, sharing) / seconds
        with self._lock:
            self.probed = self.probed or rate
            rate = min(rate, self.probed)
            old = self.tokens_per_s
            self.tokens_per_s = rate if old is None else (1 - self.WEIGHT) * old + self.WEIGHT * rate

    def expected_s(self, prompt_tokens: int, sharing: int = 1) -> float | None:
        """Seconds reading `prompt_tokens` should take at the measured rate, with `sharing` answers
        using the reader at once (None before any measurement)."""
        rate = self.tokens_per_s
        return prompt_tokens * max(1, sharing) / rate if rate else None

    def first_token_limit(self, prompt_tokens: int, sharing: int = 1) -> float:
        expected = self.expected_s(prompt_tokens, sharing)
        if expected is None:
            return self.ceiling_s
        return min(self.ceiling_s, max(self.floor_s, expected * self.FACTOR))

    def to_dict(self) -> dict:
        return {"prefill_tokens_per_s": round(self.tokens_per_s, 1) if self.tokens_per_s else None,
                "first_token_floor_s": self.floor_s, "first_token_ceiling_s": self.ceiling_s, "factor": self.FACTOR}


def paced(pieces: Iterator[str], *, first_token_s: float, stall_s: float,
          on_timeout: Callable[[bool, float], BaseException]) -> Iterator[str]:
    """Yield `pieces`, ending with `on_timeout(first, waited_s)` raised when the first piece takes
    longer than `first_token_s` or a later one longer than `stall_s`.

    The pieces are read on a thread of their own, so a wait ends on time even while a network read
    blocks (a client's read timeout is one number for the whole stream). Closing this generator
    (the person went away) stops the reading thread at its next piece."""
    box: queue.Queue = queue.Queue()
    stop = threading.Event()
    done = object()

    def pump() -> None:
        try:
            for piece in pieces:
                if stop.is_set():
                    break
                box.put(piece)
        except BaseException as exc:  # handed to the consumer, which raises it in its own thread
            box.put(exc)
        finally:
            close = getattr(pieces, "close", None)
            if close is not None and stop.is_set():
                try:
                    close()
                except Exception:
                    pass
            box.put(done)

    threading.Thread(target=pump, name="reader-stream", daemon=True).start()
    first = True
    try:
        while True:
            limit = first_token_s if first else stall_s
            try:
                item = box.get(timeout=limit)
            except queue.Empty:
                raise on_timeout(first, limit) from None
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            first = False
            yield item
    finally:
        stop.set()

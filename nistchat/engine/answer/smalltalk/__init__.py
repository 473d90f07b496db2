"""Small talk and questions about the assistant, told apart from NIST questions before retrieval.

Why a stage of its own: a greeting or a question about what the assistant knows needs no
passage, and sent through retrieval, the risk classifier and the reader it ends as a slow refusal
(docs/decisions.md, "The first quarter hour"). Here the answer comes from the catalogue and the
settings, at once, with no risk label and no refusal counted.

Why the embedder and labelled examples, not a keyword list: people greet, thank and ask what the
assistant does in endless phrasings and typos, and a NIST question may open with "hi" or "thanks".
The question's vector (the same MiniLM that retrieval uses, so no model is loaded for this) is
compared with `examples.jsonl`, written by hand per kind, NIST questions and follow-ups included
as the other side. A question is small talk only when its nearest kind is a small-talk kind, by
a margin, and it is short and names no framework identifier. The thresholds were chosen on the
labelled dev split (data/eval/smalltalk_dev.jsonl with the dev question sets as NIST questions);
`nistchat eval smalltalk` reports them and the held-out split (docs/decisions.md).
"""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ...retrieval.query import framework_ids, normalise
from ...verification.premise import presuppositions

EXAMPLES = Path(__file__).with_name("examples.jsonl")
NIST = "nist"
KINDS = ("greeting", "thanks", "goodbye", "capabilities", "documents", "identity", "off_topic")
# Questions about the assistant: one of them that leans on an answer ("which documents does it
# recommend?") asks about that answer instead, unless it speaks to the assistant (`_ADDRESSED`).
# Greetings, thanks and an off-topic question ("will it rain today?", its "it" pointing at nothing)
# stay what they are after an answer.
ABOUT_ASSISTANT = ("capabilities", "documents", "identity")
_ADDRESSED = re.compile(
    r"\b(?:you|your|yourself|u|ur|nistchat|this\s+(?:assistant|bot|chatbot|tool|app|system|service))\b", re.IGNORECASE)
TOP_N = 3  # a kind's score: the mean cosine of the question to its TOP_N nearest examples
MAX_WORDS = 12  # longer messages carry a question of their own: never small talk


@dataclass(frozen=True)
class Example:
    label: str
    text: str


@dataclass(frozen=True)
class Decision:
    """What the classifier saw: the nearest kind, its score, the NIST side's score, and the verdict."""
    kind: str  # one of KINDS, or NIST
    score: float
    nist_score: float
    small_talk: bool
    why: str = ""

    def to_dict(self) -> dict:
        return {"kind": self.kind, "score": round(self.score, 4), "nist_score": round(self.nist_score, 4),
                "small_talk": self.small_talk, "why": self.why}


def load_examples(path: Path = EXAMPLES) -> list[Example]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Example(r["label"], r["text"]) for r in rows]


class SmallTalkClassifier:
    """Nearest labelled examples by cosine; the examples are embedded once, on first use."""

    def __init__(self, embedder, *, min_score: float, margin: float, examples: list[Example] | None = None):
        self.embedder = embedder
        self.min_score, self.margin = min_score, margin
        self.examples = examples if examples is not None else load_examples()
        self._matrix: np.ndarray | None = None
        self._lock = threading.Lock()

    def _vectors(self) -> np.ndarray:
        with self._lock:
            if self._matrix is None:
                self._matrix = self.embedder.embed_query([e.text for e in self.examples])
            return self._matrix

    def scores(self, text: str) -> dict[str, float]:
        """Each kind's (and NIST's) score for the text."""
        sims = self._vectors() @ self.embedder.embed_query([text])[0]
        by_kind: dict[str, list[float]] = {}
        for example, sim in zip(self.examples, sims):
            by_kind.setdefault(example.label, []).append(float(sim))
        return {kind: float(np.mean(sorted(values, reverse=True)[:TOP_N])) for kind, values in by_kind.items()}

    def classify(self, question: str, scores: Callable[[str], dict[str, float]] | None = None) -> Decision:
        """`scores` replaces `self.scores` (a threshold sweep passes a memoised one)."""
        text = normalise(question)
        rule = self.rule_out(text)
        return rule if rule is not None else self.decide((scores or self.scores)(text))

    @staticmethod
    def rule_out(text: str) -> Decision | None:
        """A NIST question by its shape alone (long, naming a framework id, or taking a claim for granted);
        None to ask the vectors."""
        if len(text.split()) > MAX_WORDS:
            return Decision(NIST, 0.0, 0.0, False, f"more than {MAX_WORDS} words")
        if framework_ids(text):
            return Decision(NIST, 0.0, 0.0, False, "names a framework identifier")
        if presuppositions(text):  # "since your library is complete, …?" asserts what it asks about
            return Decision(NIST, 0.0, 0.0, False, "takes a claim for granted")
        return None

    def decide(self, scores: dict[str, float]) -> Decision:
        """The verdict from the kinds' scores, at this classifier's thresholds."""
        scores = dict(scores)
        nist = scores.pop(NIST, 0.0)
        kind, best = max(scores.items(), key=lambda kv: kv[1])
        if best < self.min_score:
            return Decision(NIST, best, nist, False, f"nearest kind {kind} under {self.min_score}")
        if best - nist < self.margin:
            return Decision(NIST, best, nist, False, f"{kind} not {self.margin} above the NIST examples")
        return Decision(kind, best, nist, True)


def _listing(labels: list[str]) -> str:
    return "\n".join(f"- {label}" for label in labels)


def reply(kind: str, documents: list, reader: str = "") -> str:
    """The answer for a small-talk kind, from the catalogue (`catalog.DocEntry` list) and the reader's name."""
    titles = [d.label for d in documents]
    covers = (f"the {len(titles)} NIST AI publications indexed here" if titles
              else "NIST AI publications (none is indexed yet: an administrator runs `nistchat ingest`)")
    example = "For example: \"What are the four functions of the AI RMF Core?\""
    if kind == "greeting":
        return f"Hello! I answer questions about {covers}, with the passages I used and a check of each sentence. {example}"
    if kind == "thanks":
        return "You're welcome. Ask another question whenever you like."
    if kind == "goodbye":
        return "Goodbye! Your conversation stays in History."
    if kind == "capabilities":
        return (f"I answer policy questions from {covers}. Each answer shows the passages it came from, and "
                "its sentences are checked against them; I say so when the documents do not answer a question. "
                f"You can follow up on an answer, limit the search to some documents, and find past "
                f"conversations in History. {example}")
    if kind == "documents":
        if not titles:
            return f"No documents are indexed yet. {covers[0].upper()}{covers[1:]}."
        return f"I answer from these {len(titles)} documents:\n{_listing(titles)}"
    if kind == "identity":
        model = f" The reader model is {reader}." if reader else ""
        return ("I'm NISTChat, an assistant that runs entirely on this organisation's own server: no question "
                f"or answer leaves it.{model} I answer from {covers}.")
    return f"That is outside what I can help with: I only answer questions about {covers}."


def may_follow_up(decision: Decision, text: str) -> bool:
    """Whether a small-talk verdict may stand for a question about the answer before it: a question
    about the assistant (`ABOUT_ASSISTANT`) that does not speak to it ("who made you?", "what can
    this assistant do?" stay small talk)."""
    return decision.small_talk and decision.kind in ABOUT_ASSISTANT and not _ADDRESSED.search(text)


def is_refusal(kind: str) -> bool:
    """Off-topic questions are refused (in one sentence); the other kinds are answered."""
    return kind == "off_topic"



"""Audit mode: check an answer written elsewhere (another AI tool, a colleague) against the
publications, sentence by sentence, and blend the signals into one trust score.

1. Evidence: passages retrieved for the question together with the answer, plus a few for each
   sentence of the answer (one question's passages rarely cover every claim of a long answer).
2. Per sentence: the best passage is the one whose closest sentence (or pair of adjacent
   sentences) covers most of the claim's content words and is nearest in meaning (embedder
   cosine). Numbers, identifiers and acronyms the best passage does not state count against the
   sentence (the chat's anchor check, `verify.ungrounded`); stated in no passage at all, more so.
3. The verifier (`models.get("verifier")`, MiniCheck or the reader as a Yes/No judge) is called at
   most once per sentence, on the best passage only; `judge=False` skips it (deterministic).
4. Verdict: supported, contradicted (the closest passage says the same thing with another
   number/name or the opposite negation, or the judge says No to a very close passage), or not found.
5. Trust score: the mean sentence score (0-1), labelled with AuditThresholds; the thresholds were
   chosen from data/eval/audit_pairs.jsonl (faithful vs one-fact-changed answers; docs/evaluation.md).

Plain Python, no Flask: the CLI, `/api/audit` and the `/audit` page all call `audit()`.
"""
from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from typing import Protocol

import numpy as np

from ...config import Settings
from ..backends.select import ModelRegistry
from ..retrieval.query import NUMBER_WORDS
from ..text import split_sentences
from ..types import Passage, Retrieval
from .premise import NEGATION
from .verify import (_content_words, _present, _stretches, anchors, claim_text, document_for,
                     is_checkable, stated_nowhere, ungrounded, _haystack)

SUPPORTED, CONTRADICTED, NOT_FOUND = "supported", "contradicted", "not found"
SUPPORTED_MIN = 0.62  # a sentence scoring at least this, with every anchor stated, is supported
CONTRADICT_SIM = 0.80  # a passage this close in meaning that states other numbers/names contradicts the claim
PER_SENTENCE_K = 3  # extra passages retrieved for each sentence
MAX_QUERY_CHARS = 1500  # question + answer, as one retrieval query


@dataclass(frozen=True)
class AuditThresholds:
    """Trust score -> label, chosen on the answer pairs (faithful and with one fact changed): few
    changed answers reach Supported, and every faithful one is at least Partial (the figures:
    docs/evaluation.md, "Audit: checking an answer from elsewhere")."""
    supported: float = 0.75
    partial: float = 0.45

    def label(self, score: float) -> str:
        if score >= self.supported:
            return "Supported"
        return "Partial" if score >= self.partial else "Likely unsupported"


@dataclass
class SentenceResult:
    text: str
    verdict: str  # supported | contradicted | not found
    score: float
    passage: dict | None  # the best passage: id, doc, title, section, page, text, rank
    support: list[str] = field(default_factory=list)  # the passage's sentences that back the claim
    missing: list[str] = field(default_factory=list)  # anchors the best passage does not state
    nowhere: list[str] = field(default_factory=list)  # anchors no retrieved passage states
    coverage: float = 0.0  # share of the claim's content words in the best stretch
    similarity: float = 0.0  # embedder cosine of claim and best stretch
    judge: bool | None = None  # the verifier's Yes/No on the best passage; None when not asked
    reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class AuditResult:
    question: str
    answer: str
    trust_score: float
    label: str
    sentences: list[SentenceResult]
    passages: list[dict]
    docs: list[str]
    models: dict
    method: str
    timings_ms: dict

    def to_dict(self) -> dict:
        return {"question": self.question, "answer": self.answer, "trust_score": self.trust_score,
                "label": self.label, "sentences": [s.to_dict() for s in self.sentences], "passages": self.passages,
                "docs": self.docs, "models": self.models, "method": self.method, "timings_ms": self.timings_ms}


METHOD = ("Each sentence of the answer is compared with the retrieved passages: the share of its content words "
          "in the closest passage sentence (45 %; 55 % without the verifier), its closeness in meaning to that "
          "sentence (35 %; 45 %, embedder cosine) and, when the verifier is used, its Yes/No on the best passage "
          "(20 %). Each number, "
          "identifier, acronym or count the best passage does not state halves the sentence's score (one no "
          "passage states at all cuts it to a quarter); one the passage states, but not in the sentences the "
          "claim matches, multiplies it by 0.6. The trust score is the mean sentence score.")


def _words(text: str) -> set[str]:
    return {w for w in _content_words(text) if len(w) > 1 or w.isdigit()}


def _pool(engine: Engine, question: str, sentences: list[str], docs: list[str] | None, k: int) -> list[Passage]:
    """Passages for question+answer, then for each sentence, without repeats, in that order."""
    joined = f"{question.strip()} {' '.join(sentences)}"[:MAX_QUERY_CHARS]
    seen: dict[str, Passage] = {}
    for query, depth in [(joined, k)] + [(s, PER_SENTENCE_K) for s in sentences]:
        for p in engine.retrieve(query, k=depth, docs=docs).passages:
            seen.setdefault(p.id, p)
    return list(seen.values())


def _rescale(cos: float) -> float:
    """MiniLM cosines: unrelated text ~0.2, a paraphrase ~0.8 and up -> 0..1."""
    return float(min(1.0, max(0.0, (cos - 0.25) / 0.6)))


def facts(claim: str) -> list[str]:
    """What must be stated where the claim is supported: the chat's anchors (numbers, identifiers,
    acronyms: verify.anchors) and counts written as words ("six functions")."""
    counts = [w for w in re.findall(r"[a-z]+", claim.lower()) if w in NUMBER_WORDS[2:]]
    return list(dict.fromkeys(anchors(claim) + counts))


def _stated(fact: str, text: str) -> bool:
    """The fact is in the text. A name in capitals (MEASURE, GOVERN) must be in capitals: in these
    documents "measure" and "govern" are also ordinary verbs, and a swapped function name must not
    pass because the verb is nearby."""
    if fact.isalpha() and fact.isupper():
        return re.search(rf"(?<![A-Za-z0-9]){fact}(?![A-Za-z0-9])", text) is not None
    low = text.lower()
    if fact in NUMBER_WORDS:
        return bool(re.search(rf"\b(?:{fact}|{NUMBER_WORDS.index(fact)})\b", low))
    return _present(fact, low)


def _negated(text: str) -> bool:
    return bool(NEGATION.search(text))


class Evidence:
    """The passages and their sentences (and adjacent pairs), embedded once per audit."""

    def __init__(self, passages: list[Passage], embedder):
        self.passages, self.embedder = passages, embedder
        self.stretches: list[tuple[int, str]] = [(i, s) for i, p in enumerate(passages) for s in _stretches(p)]
        self.vectors = embedder.embed([s for _, s in self.stretches]) if embedder is not None and self.stretches \
            else None

    def cosines(self, claim: str) -> np.ndarray:
        if self.vectors is None:
            return np.zeros(len(self.stretches), dtype="float32")
        return self.vectors @ self.embedder.embed([claim])[0]


def check_sentence(claim: str, sentence: str, evidence: Evidence, question: str = "",
                   judge=None, doc_chars: int = 1200) -> SentenceResult:
    """One sentence against the passages: best passage, supporting sentences, verdict and score."""
    passages, stretches = evidence.passages, evidence.stretches
    words = _words(claim)
    nowhere = stated_nowhere(anchors(claim), [question.lower()] + [_haystack(p) for p in passages])
    cos = evidence.cosines(claim)
    claim_facts = facts(claim)
    missing_in = [ungrounded(claim, p) for p in passages]
    best: tuple[float, int, str, float, float] | None = None  # (key, passage index, stretch, coverage, cos)
    for (i, stretch), c in zip(stretches, cos):
        coverage = len(words & _words(stretch)) / len(words) if words else 0.0
        near = " ".join((passages[i].doc, passages[i].title, passages[i].section, stretch))
        elsewhere = [f for f in claim_facts if f not in missing_in[i] and not _stated(f, near)]
        # the best match states the claim's facts where it says the same thing
        key = (0.55 * coverage + 0.45 * _rescale(float(c))) * 0.5 ** len(missing_in[i]) * 0.6 ** len(elsewhere)
        if best is None or key > best[0]:
            best = (key, i, stretch, coverage, float(c))
    if best is None:
        return SentenceResult(sentence, NOT_FOUND, 0.0, None, nowhere=nowhere, reason="no passage to compare with")
    _, i, stretch, coverage, c = best
    passage = passages[i]
    missing = missing_in[i]
    # stated in the passage but not where the claim matches it ("GOVERN 1.4 says <what GOVERN 1.6 says>")
    near = " ".join((passage.doc, passage.title, passage.section, stretch))
    elsewhere = [f for f in claim_facts if f not in missing and not _stated(f, near)]
    sim = _rescale(c)
    verdict_judge = None
    if judge is not None:
        verdict_judge = bool(judge(document_for(passage, doc_chars), claim))
        score = 0.45 * coverage + 0.35 * sim + 0.20 * (1.0 if verdict_judge else 0.0)
    else:
        score = 0.55 * coverage + 0.45 * sim
    for anchor in missing:
        score *= 0.25 if anchor in nowhere else 0.5
    score *= 0.6 ** len(elsewhere)
    support = [s for s in split_sentences(passage.text)
               if s in stretch or (words and len(words & _words(s)) / len(words) >= 0.5)]
    negation_flip = _negated(claim) != _negated(stretch) and coverage >= 0.6
    reasons = []
    if missing:
        reasons.append(f"not stated in the best passage: {', '.join(missing)}")
    if elsewhere:
        reasons.append(f"not stated in the matching sentences: {', '.join(elsewhere)}")
    if negation_flip:
        reasons.append("the closest passage sentence has the opposite negation")
    if verdict_judge is False:
        reasons.append("the verifier answered No")
    other_facts = set(facts(stretch)) - set(claim_facts)  # the passage states its own numbers/names here
    if ((missing or elsewhere) and c >= CONTRADICT_SIM and other_facts) or negation_flip \
            or (verdict_judge is False and c >= CONTRADICT_SIM):
        verdict = CONTRADICTED
        score = min(score, SUPPORTED_MIN - 0.01)
    elif missing or elsewhere or (verdict_judge is False) or score < SUPPORTED_MIN:
        verdict = NOT_FOUND
    else:
        verdict = SUPPORTED
    shown = {**passage.to_dict(), "n": i + 1}
    return SentenceResult(sentence, verdict, round(float(score), 3), shown, support, missing + elsewhere, nowhere,
                          round(coverage, 3), round(c, 3), verdict_judge, "; ".join(reasons))


class Engine(Protocol):
    """What an audit uses of the engine (a Runtime is one): retrieval, the models, the settings."""
    settings: Settings
    models: ModelRegistry

    def retrieve(self, question: str, *, k: int = 6, docs: list[str] | None = None) -> Retrieval: ...


def audit(engine: Engine, question: str, answer: str, *, docs: list[str] | None = None, judge: bool = True,
          k: int = 6, thresholds: AuditThresholds | None = None) -> AuditResult:
    """Check `answer` (to `question`) against the publications. `judge=False` never calls the verifier."""
    thresholds = thresholds or AuditThresholds()
    start = time.perf_counter()
    sentences = [s for s in split_sentences(answer) if is_checkable(s)]
    if not sentences and answer.strip():
        sentences = [answer.strip()]
    passages = _pool(engine, question, [claim_text(s) for s in sentences], docs, k)
    retrieve_ms = (time.perf_counter() - start) * 1000
    embedder = engine.models.embedder()
    check = None
    models = {"embedder": getattr(embedder, "name", "embedder")}
    if judge:
        verifier = engine.models.verifier()
        check = verifier.check
        active = engine.models.active()
        models["verifier"] = active.get("verifier", getattr(verifier, "name", "verifier"))
    t = time.perf_counter()
    evidence = Evidence(passages, embedder)
    results = [check_sentence(claim_text(s), s, evidence, question, check,
                              engine.settings.verify.doc_chars) for s in sentences]
    check_ms = (time.perf_counter() - t) * 1000
    trust = round(sum(r.score for r in results) / len(results), 3) if results else 0.0
    used = sorted({r.passage["id"] for r in results if r.passage})
    shown = [dict(p.to_dict(), n=i) for i, p in enumerate(passages, 1) if p.id in used]
    return AuditResult(question, answer, trust, thresholds.label(trust), results, shown, list(docs or []), models,
                       METHOD + ("" if judge else " The verifier was not used (no judge)."),
                       {"retrieve": round(retrieve_ms, 1), "check": round(check_ms, 1),
                        "total": round((time.perf_counter() - start) * 1000, 1)})


def measure_pairs(engine: Engine, pairs: list[dict], *, judge: bool = False, log=None) -> dict:
    """Score each pair's faithful and changed answer; the share where the faithful one scores higher,
    and the score distributions the thresholds are chosen from."""
    rows = []
    for pair in pairs:
        good = audit(engine, pair["question"], pair["faithful"], judge=judge)
        bad = audit(engine, pair["question"], pair["changed"], judge=judge)
        rows.append({"id": pair.get("id"), "change": pair.get("change"), "faithful": good.trust_score,
                     "changed": bad.trust_score, "higher": good.trust_score > bad.trust_score,
                     "faithful_verdicts": [s.verdict for s in good.sentences],
                     "changed_verdicts": [s.verdict for s in bad.sentences]})
        if log:
            log(rows[-1])
    wins = sum(r["higher"] for r in rows)
    return {"pairs": len(rows), "faithful_higher": wins, "share": round(wins / len(rows), 3) if rows else 0.0,
            "judge": judge, "rows": rows}

"""Answer evaluation: each question answered by the real pipeline, then scored.

Deterministic scores (every item, no model call):
- `evidence_hit`: every evidence string sits inside one passage handed to the reader (answerable);
- `key_terms`: share of the item's key terms found in the answer. `key_terms` from the item when
  it has them; otherwise the fallback, `fallback_terms(answer)`: the expected answer's content
  words (4+ letters, not a stop word) and identifiers, at most 8, in order. A term is present when
  it occurs in the answer, case-insensitively, with a trailing plural "s" ignored;
- `refused_negative`: a negative question was refused (1) or answered (0);
- `refused_or_flagged`: a negative question was refused or its answer flagged (a sentence the
  passages do not support is marked), so the user was warned;
- `wrongly_refused`: an answerable question was refused (lower is better);
- `list_length`: a question naming N items got a list of N (only when it names a count);
- `supported`: share of the answer's checked sentences that verification supported.

Judged scores (a subset, `judge_n` items, because each is several model calls), each on
0 / .25 / .5 / .75 / 1 and stored with the judge's name: `faithfulness` (share of answer
sentences the verifier finds in the passages), `relevance` (does the answer address the
question), `completeness` (share of the expected answer's key points found in the answer) and
`correctness` (share of answer sentences the expected answer supports). The judge is the
verifier role: Ollama's MiniCheck when present, else the embedded reader as a Yes/No judge.

Eval questions take EVAL tickets in the reader queue: a person's question always goes first.
"""
from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Callable

from ..answer.events import Error, Final, Sources
from ..backends.queue import EVAL
from ..retrieval.query import prepare
from ..types import verdict_dict
from ..verification.verify import count_mismatch, split_sentences
from ..vocabulary import KEY_TERM_STOPWORDS
from .retrieval import missing_evidence

if TYPE_CHECKING:  # an evaluation drives the whole engine: the composition root is below it
    from ..runtime import Runtime

JUDGED = ("faithfulness", "relevance", "completeness", "correctness")
MAX_CLAIMS = 3  # claims judged per judged metric: bounds the cost of one item
_TERM = re.compile(r"[A-Za-z][A-Za-z0-9.-]*[A-Za-z0-9]")


def fallback_terms(answer: str, limit: int = 8) -> list[str]:
    """Content words and identifiers of an expected answer, when an item names no key terms."""
    out: list[str] = []
    for word in _TERM.findall(answer or ""):
        ident = any(c.isdigit() for c in word) or (word.isupper() and len(word) >= 2)
        if (ident or (len(word) >= 4 and word.lower() not in KEY_TERM_STOPWORDS)) and word.lower() not in [o.lower() for o in out]:
            out.append(word)
    return out[:limit]


def term_present(term: str, text: str) -> bool:
    t = term.lower().strip()
    t = t[:-1] if len(t) > 4 and t.endswith("s") else t
    return t in (text or "").lower()


def quarter(share: float) -> float:
    return round(share * 4) / 4


def subset(items: list[dict], n: int | None) -> list[dict]:
    """The first n items taken round-robin over categories in file order, so a small run still
    mixes categories (negatives included)."""
    if not n or n >= len(items):
        return list(items)
    by_cat: dict[str, list[dict]] = {}
    for item in items:
        by_cat.setdefault(item.get("category", "?"), []).append(item)
    out, queues = [], list(by_cat.values())
    while len(out) < n:
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return sorted(out, key=items.index)


def deterministic_scores(item: dict, outcome: dict) -> dict:
    scores: dict = {}
    negative = item.get("category") == "negative" or not (item.get("evidence") or item.get("answer"))
    refused = bool(outcome.get("refused"))
    answer = outcome.get("answer", "")
    if negative:
        scores["refused_negative"] = 1.0 if refused else 0.0
        scores["refused_or_flagged"] = 1.0 if refused or outcome.get("flagged") else 0.0
    else:
        if item.get("evidence"):
            scores["evidence_hit"] = 0.0 if missing_evidence(item["evidence"], [p.get("text", "") for p in
                                                                              outcome.get("passages", [])]) else 1.0
        scores["wrongly_refused"] = 1.0 if refused else 0.0
        terms = item.get("key_terms") or fallback_terms(item.get("answer", ""))
        if terms:
            scores["key_terms"] = round(sum(term_present(t, answer) for t in terms) / len(terms), 4)
    count = prepare(item["question"]).list_count
    if count and not refused:
        scores["list_length"] = 0.0 if count_mismatch(answer, count) else 1.0
    verdicts = outcome.get("verdicts") or []
    if verdicts and not refused:
        scores["supported"] = round(sum(1 for v in verdicts if v.get("supported")) / len(verdicts), 4)
    return scores


def passed(item: dict, scores: dict) -> bool:
    if "refused_negative" in scores:
        return scores["refused_negative"] == 1.0
    return scores.get("wrongly_refused") == 0.0 and scores.get("evidence_hit", 1.0) == 1.0 \
        and scores.get("key_terms", 1.0) >= 0.5


def judge_scores(check: Callable[[str, str], bool], item: dict, outcome: dict, doc_chars: int) -> dict:
    """The four judged scores (quarter steps) for one answered item; {} for refusals and negatives."""
    answer = outcome.get("answer", "")
    if outcome.get("refused") or not answer.strip() or not item.get("answer"):
        return {}
    sentences = [s for s in split_sentences(answer) if len(s.split()) >= 3][:MAX_CLAIMS] or [answer]
    passages = "\n\n".join(p.get("text", "") for p in outcome.get("passages", []))[:2 * doc_chars]
    expected = item["answer"]
    points = [p.strip() for p in re.split(r"(?<=[.;])\s+|,\s+(?:and\s+)?|\band\b", expected)
              if len(p.split()) >= 2][:MAX_CLAIMS + 1] or [expected]

    def share(doc: str, claims: list[str]) -> float:
        return quarter(sum(1 for c in claims if check(doc, c)) / len(claims))

    return {"faithfulness": share(passages, sentences),
            "relevance": 1.0 if check(answer, f"This text answers the question: {item['question']}") else 0.0,
            "completeness": share(answer, points),
            "correctness": share(expected, sentences)}


def answer_item(runtime: Runtime, item: dict) -> dict:
    """Ask one question through the real pipeline on an EVAL ticket (handed to the answer, which
    finishes it); what it produced, with timings, as the stored run records it."""
    outcome: dict = {"passages": [], "verdicts": [], "answer": ""}
    t = time.perf_counter()
    for event in runtime.answer(item["question"], ticket=runtime.queue.take("eval", capped=False, priority=EVAL)):
        if isinstance(event, Sources):
            outcome["passages"] = [{"n": i, "doc": p.doc, "section": p.section, "text": p.text}
                                   for i, p in enumerate(event.passages, 1)]
        elif isinstance(event, Final):
            a = event.answer
            outcome.update(answer=a.text, refused=a.refused, refusal_reason=a.refusal_reason, retried=a.retried,
                           flagged=a.flagged, verdicts=[verdict_dict(v) for v in a.sentences], risk=a.risk,
                           timings_ms={**a.timings_ms, "queue": a.queue_ms})
        elif isinstance(event, Error):
            outcome.update(error=event.failure.line, answer=event.failure.partial)
    outcome["ms"] = round((time.perf_counter() - t) * 1000, 1)
    return outcome


def judge_name(runtime: Runtime) -> str:
    runtime.models.verifier()
    return runtime.models.active().get("verifier", "?")


def judge_item(runtime: Runtime, item: dict, outcome: dict) -> dict:
    """Judged scores, at the reader's turn of an EVAL ticket (the judge is a model call on the same reader)."""
    verifier = runtime.models.verifier()
    with runtime.queue.turn("eval", priority=EVAL):
        return judge_scores(verifier.check, item, outcome, runtime.settings.verify.doc_chars)


def run_answers(runtime: Runtime, items: list[dict], *, judge_n: int = 0,
                on_item: Callable[[dict, dict], None] | None = None) -> list[dict]:
    """Answer and score each item; `on_item(item, record)` after each (storage, progress)."""
    judge = judge_name(runtime) if judge_n else ""
    records = []
    for i, item in enumerate(items):
        outcome = answer_item(runtime, item)
        scores = deterministic_scores(item, outcome) if "error" not in outcome else {}
        judged = judge_item(runtime, item, outcome) if i < judge_n and "error" not in outcome else {}
        record = {**outcome, "scores": scores, "judged": {k: {"score": v, "judge": judge} for k, v in judged.items()},
                  "passed": passed(item, scores) if scores else False}
        records.append(record)
        if on_item:
            on_item(item, record)
    return records

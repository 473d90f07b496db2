"""Refusals: before generation when retrieval is clearly off-topic, after it when the reader
declines or nothing it wrote is supported. A refusal says what the corpus covers and points to
the closest sources, so the user knows where to look instead.

The pre-generation gate compares one retrieval score with thresholds derived on the dev set by
scripts/calibrate_refusal.py, never picked by feel.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..corpus.catalog import documents
from ..retrieval.query import framework_ids
from ..retrieval.translate import typed_language
from ..text import identifier_regex
from ..types import Passage, Retrieval
from .language import WORDING

# Pre-generation gate, two rules; scripts/calibrate_refusal.py derives both thresholds on the dev
# set, never picked by feel (re-run it after changing the embedder, the chunking or the dev set;
# the values live in config.Refusal, `[refusal] threshold / unknown_term_threshold`):
# 1. threshold: refuse when the feature (top dense cosine between the question and any child
#    chunk, all-MiniLM-L6-v2) is below it. Off by default (0.0): colloquial questions score low
#    cosines too, so a low score alone is not a clear case. A question whose framework id a
#    retrieved passage states is exempt (stated_ids) and left out of its calibration.
# 2. unknown_term_threshold: refuse when the question names something the corpus never mentions (an
#    acronym, identifier or proper noun absent from the index vocabulary) AND the feature is below
#    the median answerable score: an unknown name alone is not enough (a user's own organisation
#    name is unknown too), but with middling retrieval it marks an out-of-corpus topic.
# The gate refuses only clear cases; the reader and the checks after generation decide the rest
# (docs/decisions.md, "Refusal gate calibration").


NOTHING_TO_REWRITE = "nothing_to_rewrite"  # a rewrite asked of a turn that has no answer (also a WORDING key)


@dataclass
class Gate:
    score: float | None
    threshold: float
    feature: str
    refuse: bool
    unknown_terms: list[str] = field(default_factory=list)
    unknown_term_threshold: float | None = None
    # which rule refused: "no_passages" | "low_score" | "unknown_term" | NOTHING_TO_REWRITE; "follow_up": exempt
    rule: str = ""
    stated_ids: list[str] = field(default_factory=list)  # framework ids of the question a passage states

    def to_dict(self) -> dict:
        return {"score": None if self.score is None else round(self.score, 4), "threshold": self.threshold,
                "feature": self.feature, "refuse": self.refuse, "unknown_terms": self.unknown_terms,
                "unknown_term_threshold": self.unknown_term_threshold, "rule": self.rule,
                "stated_ids": self.stated_ids}


_VOCAB_TOKEN = re.compile(r"[a-z0-9]+(?:[-/.][a-z0-9]+)*")
_QUESTION_TOKEN = re.compile(r"[A-Za-z0-9][\w\-/.]*[A-Za-z0-9]|[A-Za-z0-9]")
_ORDINAL = re.compile(r"\d{1,2}(?:st|nd|rd|th)", re.IGNORECASE)  # "the 2nd one" names nothing
_LANGUAGE = re.compile(r"english|spanish|german|french", re.IGNORECASE)  # "in German, please" names no topic


def vocabulary(index) -> set[str]:
    """Every word and identifier in the indexed corpus (lower-cased). A scan of the whole corpus:
    the answer pipeline keeps one per index."""
    parents = list(getattr(index, "parents", {}).values())
    texts = [f"{p.doc} {p.title} {' '.join(p.heading_path)} {p.text}" for p in parents] or [
        f"{c.doc} {c.text}" for c in index.children]
    vocab = set()
    for text in texts:
        for tok in _VOCAB_TOKEN.findall(text.lower()):
            vocab.add(tok)  # "nist.sp.800-218a" also yields "800-218a", "800", "218a"
            vocab.update(re.split(r"[./]", tok))
            vocab.update(re.split(r"[-./]", tok))
    return vocab


def named_terms(question: str) -> list[str]:
    """Acronyms, identifiers and capitalised words after the first: the names a question is about."""
    terms = []
    for i, m in enumerate(_QUESTION_TOKEN.finditer(question)):
        tok = m.group().strip("./-")
        if not tok:
            continue
        if re.search(r"[A-Z].*[A-Z]", tok) or re.search(r"\d", tok) or (i > 0 and tok[0].isupper()):
            terms.append(tok)
    return terms


def unknown_terms(question: str, vocab: set[str]) -> list[str]:
    """Named terms of the question that the corpus never mentions."""
    return [t for t in named_terms(question) if not _ORDINAL.fullmatch(t) and not _LANGUAGE.fullmatch(t)
            and not _known(t, vocab) and not all(_known(name, vocab) for name in _names_in(t))]


def _known(term: str, vocab: set[str]) -> bool:
    return term.lower() in vocab or term.lower().rstrip("s") in vocab


def _names_in(term: str) -> list[str]:
    """What a term names: its acronyms when words are joined to them ("TEVV" in "evaluation/TEVV",
    "CI" in "CI-leitfaden", "HIPAA" in "HIPAA-compliant"), else the whole. Why: a word joined to a
    known acronym (German joins nouns so; a translation may keep such a compound) does not make
    the acronym a name the corpus lacks. An id with a digit ("800-53") stays whole."""
    parts = re.split(r"[-/]", term)
    acronyms = [p for p in parts if re.search(r"[A-Z].*[A-Z]", p)]
    if len(parts) < 2 or re.search(r"\d", term) or not acronyms:
        return [term]
    return acronyms


def dense_max(retrieval: Retrieval, embedder=None) -> float | None:
    """Top dense cosine from the retrieval trace; computed from the passages if the trace lacks it."""
    stage = retrieval.trace.stage("dense")
    if stage is not None and stage.items:
        return max(float(item.get("score", 0.0)) for item in stage.items)
    if embedder is None or not retrieval.passages:
        return None
    question = embedder.embed_query([retrieval.question])[0]
    return float(np.max(embedder.embed([p.text for p in retrieval.passages]) @ question))


def rerank_max(retrieval: Retrieval, embedder=None) -> float | None:
    """Top cross-encoder score, when a reranker ran."""
    stage = retrieval.trace.stage("rerank")
    if stage is None or not stage.items:
        return None
    return max(float(item.get("score", 0.0)) for item in stage.items)


FEATURES = {"dense_max": dense_max, "rerank_max": rerank_max}


def settings_gate(settings) -> tuple[str, float, float]:
    r = settings.refusal
    return r.feature, r.threshold, r.unknown_term_threshold


def stated_ids(question: str, passages: list[Passage]) -> list[str]:
    """Framework identifiers of the question (MAP 5.1, PW.4.3) that a retrieved passage states verbatim.

    Why: the embedder reads an identifier as little more than the common words around it, so an
    id-heavy question can score like an off-topic one; but a passage holding the very identifier the
    question asks about is on topic by definition. A made-up id ("MEASURE 2.14") is stated nowhere."""
    out = []
    for ident in framework_ids(question):
        rx = identifier_regex(ident)
        if any(rx.search(p.text) for p in passages):
            out.append(ident)
    return out


def asked_unknown(retrieval: Retrieval, vocab: set[str]) -> list[str]:
    """The names the unknown-term rule holds against a question: those of a question typed in
    another language as translated for the search, of them those the person typed (typed_names);
    none when it could not be translated (its words are not the English corpus's, German capitalises
    every noun, "KI" is AI: not a clear case); else those of the question as written."""
    if retrieval.english:
        return typed_names(unknown_terms(retrieval.english, vocab), retrieval.question)
    return [] if typed_language(retrieval.question) else unknown_terms(retrieval.question, vocab)


def typed_names(terms: list[str], typed: str) -> list[str]:
    """The `terms` that `typed` holds as written (a decimal comma read as a point). Why: a
    translation brings in names of its own ("Bavaria" for "Bayern", a version number, two words
    joined by a slash), and only a name the person typed says what the question is about; the names
    people ask about out of the corpus (acronyms, laws, ids) mostly cross languages as they are. One
    translated away ("GDPR" for "RGPD") no longer counts: the reader and the checks decide that one."""
    text = re.sub(r"(?<=\d),(?=\d)", ".", typed.lower())
    return [t for t in terms if re.search(rf"(?<!\w){re.escape(t.lower())}(?!\w)", text)]


def gate(retrieval: Retrieval, settings, embedder=None, vocab: set[str] | None = None) -> Gate:
    """Refuse before generation when nothing was retrieved, the score is under the threshold, or the
    question names something the corpus never mentions and the score is middling. A question whose
    framework identifier a passage states is never refused for a low score (see stated_ids). A missing
    feature (e.g. no reranker) never refuses on its own: the post-generation checks remain."""
    feature, threshold, term_threshold = settings_gate(settings)
    followup = retrieval.followup
    if followup is not None and followup.kind == "acts_on_previous" and not followup.leans_on_answered:
        # "shorter please" after a refusal: there is no answer to rewrite, and judged on its own
        # words such a turn reads as off-topic, which is not why it gets none
        return Gate(None, threshold, feature, True, rule=NOTHING_TO_REWRITE)
    if not retrieval.passages:
        return Gate(None, threshold, feature, True, rule="no_passages")
    score = FEATURES[feature](retrieval, embedder)
    unknown = asked_unknown(retrieval, vocab) if vocab else []
    g = Gate(score, threshold, feature, False, unknown, term_threshold if vocab is not None else None)
    leans = followup is not None and followup.leans_on_answered
    if score is None:
        return g
    g.stated_ids = stated_ids(retrieval.question, retrieval.passages)
    if leans and not unknown:
        # "what does the third one mean?" has no topic words of its own: the turn it leans on was
        # answered and the passages were searched for the resolved question, so a low score is
        # not a reason; only a name the corpus never mentions ("and HIPAA?") still refuses.
        g.rule = "follow_up"
    elif score < threshold and not g.stated_ids and not leans:
        g.refuse, g.rule = True, "low_score"
    elif unknown and score < term_threshold:
        g.refuse, g.rule = True, "unknown_term"
    return g


def covers(index) -> list[str]:
    """What the corpus covers, one label per indexed document (catalog.documents), in index order."""
    return [doc.label for doc in documents(index)]


def message(passages: list[Passage], reason: str = "", index=None, language: str = "") -> str:
    """What a refusal says: the documents don't answer this, what they (the `index`'s) cover, where
    to look; in `language` ('' for English). `reason` is a refusal reason (a key of WORDING:
    off_topic, reader_declined, unsupported), worded in that language, or a phrase of its own."""
    words = WORDING.get(language) or WORDING[""]
    why = words.get(reason, reason)
    lines = [words["opening"] + (f" ({why})." if why else ".")]
    if index is not None:
        lines.append(f"{words['covers']} " + "; ".join(covers(index)) + ".")
    if passages:
        closest = []
        for i, p in enumerate(passages[:3], 1):
            where = f"{p.doc}, {p.section}" if p.section else p.doc
            closest.append(f"[{i}] {where}" + (f" (p. {p.page})" if p.page is not None else ""))
        lines.append(f"{words['closest']} " + "; ".join(closest) + ".")
    return "\n".join(lines)

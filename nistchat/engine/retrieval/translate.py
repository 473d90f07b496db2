"""Questions typed in Spanish, German or French: searched as their English translation.

Why: the corpus is English, and so are MiniLM, BM25, the follow-up rules (retrieval/followup.py),
the question's shape (query.py: lists, counts, definitions) and the gate's vocabulary; only the
second embedder is multilingual. Measured on the conversation set's dev split, a question as
written found its evidence far less often than the same question in English, in every list but
the second embedder's (docs/decisions.md, "Other languages"). So such a question (and each earlier
question of the conversation typed in another language) is translated by the reader, like the
rewrite (rewrite.py): only while the reader is idle, cut at a deadline, and never instead of an
answer; translations are remembered, so a conversation's earlier turns cost nothing again. When no
translation comes (reader busy, deadline, error), the question is searched as written. The reader
still answers in the question's language (answer/language.py).
"""
from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from ..backends.base import Pace, Reader
from ..backends.queue import ReaderQueue
from ..errors import BackendError
from ..text import count_tokens, is_framework_id, neutralise, split_sentences
from .query import identifiers
from .rewrite import until

# Function words frequent in questions and rare in English ones (no word in two of the lists but the
# few the three share, so a tie is rare).
_WORDS = {
    "Spanish": {"el", "los", "las", "del", "que", "qué", "cuál", "cuáles", "cómo", "cuántos", "cuántas", "dónde",
                "por", "para", "una", "es", "son", "se", "con", "ellas", "ellos", "sobre", "y", "pero", "también",
                "puedes", "dice", "hay", "según", "cuándo", "quién", "quiénes", "debe", "deben", "puede", "pueden",
                "tiene", "tienen", "nuestro", "nuestra", "esto", "esta", "este", "estos", "esos", "esas", "más",
                "porque", "al", "lo", "su", "sus", "mi"},
    "German": {"der", "die", "das", "den", "dem", "des", "und", "ist", "sind", "was", "wie", "welche", "welcher",
               "wer", "warum", "gibt", "es", "ein", "eine", "einen", "mir", "du", "ich", "im", "zum", "zur", "mit",
               "nicht", "auch", "kannst", "darin", "viele", "waren", "hat", "für", "haben", "werden", "wird", "kann",
               "können", "soll", "sollen", "muss", "müssen", "von", "zu", "oder", "bei", "nach", "über", "wir",
               "uns", "unser", "unsere", "welches", "wann", "wo", "dass", "keine", "bitte", "nochmal"},
    "French": {"le", "la", "les", "des", "du", "est", "sont", "que", "qui", "quel", "quelle", "quels", "quelles",
               "comment", "pourquoi", "une", "et", "avec", "pour", "dans", "sur", "ce", "cette", "svp", "il", "elle",
               "vous", "peux", "combien", "où", "quoi", "qu", "au", "aux", "ou", "leur", "leurs", "nous", "notre",
               "nos", "doit", "doivent", "peut", "peuvent", "être", "ont", "cela", "ça", "ces", "mon", "mes"},
}
_ENGLISH = {"the", "what", "which", "is", "are", "does", "do", "how", "why", "who", "and", "of", "in", "for", "it",
            "this", "that", "to", "about", "can", "say", "me", "with"}

PROMPT = ("You translate messages into English. Each message is a question or request in Spanish, German or French "
          "to an assistant about NIST AI documents. Write the same question or request in English: do not answer it "
          "or carry it out. Keep names, acronyms and document identifiers; KI and IA mean AI. Keep pronouns (it, "
          "that, those) and an opening 'and' or 'so' as they are. Reply with the English only.")
# Worked examples: without them a small reader carries a request out ("say it in German" -> "Sure, ..."),
# or echoes a message that opens by asking for a language (chosen on the conversation set's dev split).
EXAMPLES = (("¿qué dice el marco sobre la transparencia?", "what does the framework say about transparency?"),
            ("peux-tu le résumer en allemand ?", "can you summarise it in German?"),
            ("und wer ist dafür zuständig?", "and who is responsible for it?"),
            ("quels risques y sont décrits ?", "which risks are described in it?"),
            ("auf Deutsch bitte: wer hat es geschrieben?", "in German please: who wrote it?"))
CACHE_SIZE = 512  # translations remembered (a conversation's earlier questions come back every turn)
# A translation with fewer words than this share of the message's has left a sentence out (the same
# questions in English have 0.68-1.0 of their translation's words on the dev sets), once the message
# is long enough for the share to mean something.
SHORT_SHARE, SHORT_FROM_WORDS = 0.5, 8


# A request for the answer's language, in the languages a question may be typed in.
ASKED_LANGUAGE = {
    "English": re.compile(r"\b(?:in english|auf englisch|en ingl[eé]s|en anglais)\b", re.IGNORECASE),
    "Spanish": re.compile(r"\b(?:in spanish|en espa[nñ]ol|auf spanisch|en espagnol)\b", re.IGNORECASE),
    "German": re.compile(r"\b(?:in german|auf deutsch|en alem[aá]n|en allemand)\b", re.IGNORECASE),
    "French": re.compile(r"\b(?:in french|en fran[cç]ais|auf franz[oö]sisch|en franc[eé]s)\b", re.IGNORECASE),
}


def asked_language(text: str) -> str:
    """The language `text` asks the answer to be in ('English', 'Spanish', …), '' when it asks none."""
    return next((name for name, rx in ASKED_LANGUAGE.items() if rx.search(text or "")), "")


def typed_language(text: str) -> str:
    """The language `text` is typed in, when not English: 'Spanish', 'German' or 'French'; '' for
    English. Counts each language's commonest function words: enough for a question of a few
    words, and no model call."""
    words = re.findall(r"[^\W\d_]+", (text or "").lower())
    english = sum(w in _ENGLISH for w in words)
    counts = {name: sum(w in vocab for w in words) for name, vocab in _WORDS.items()}
    best = max(counts, key=counts.get)
    return best if counts[best] >= 2 and counts[best] > english else ""


@dataclass(frozen=True)
class Translation:
    language: str  # what the text is typed in ('' : English, nothing to do)
    text: str  # the English to search with ('' when none came)
    status: str  # "english" | "done" | "cached" | "deadline" | "busy" | "error" | "off"
    ms: float = 0.0
    note: str = ""

    def to_dict(self) -> dict:
        return {"language": self.language, "text": self.text, "status": self.status, "ms": round(self.ms, 1),
                "note": self.note}


class Translator:
    """`Translator(reader, queue, pace)(text, settings)` -> Translation; `settings` is
    `[retrieval.translate]`. The reader is borrowed from the queue only when no answer uses it.

    The deadline is `deadline_s` after the translation's prompt has been read at the reader's
    measured rate (`pace`, backends/base.Pace): the prompt is read anew after every answer, which
    leaves its own prompt in the reader, and reading it takes 1-2 s on one CPU and 6 s on another;
    a fixed deadline chosen on the first cut every translation short on the second."""

    def __init__(self, reader: Callable[[], Reader], queue: ReaderQueue, pace: Pace | None = None):
        self.reader, self.queue, self.pace = reader, queue, pace
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str, settings) -> Translation:
        language = typed_language(text)
        if not language:
            return Translation("", "", "english")
        if not settings.enabled:
            return Translation(language, "", "off", note="translation is off: searched as written")
        key = " ".join(text.split()).lower()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return Translation(language, self._cache[key], "cached")
        with self.queue.borrow() as lent:
            if not lent:
                return Translation(language, "", "busy", 0.0, "the reader is answering: searched as written")
            start = time.perf_counter()
            try:
                reader = self.reader()  # loading it is no loss: the answer needs it next
                start = time.perf_counter()  # so the deadline is the translation's own
                deadline = start + self.deadline_s(text, settings)
                pieces, status = ask(reader, text, settings, deadline)
                english = clean("".join(pieces))
                if status == "done" and english and incomplete(text, english):  # a sentence left out
                    whole = by_sentence(reader, text, settings, deadline)
                    english = whole or english  # past the deadline: the part is better than none
            except BackendError as exc:
                return Translation(language, "", "error", (time.perf_counter() - start) * 1000,
                                   f"{exc.line}: searched as written")
        ms = (time.perf_counter() - start) * 1000
        english = keep_names(text, english)
        if text == text.lower():  # typed in lower case: capitals it lacks would read as acronyms (query.py)
            english = english.lower()
        if status != "done":  # half a question searches worse than the whole one as written
            return Translation(language, "", status, ms, "no whole translation by the deadline: searched as written")
        if not english or typed_language(english):
            return Translation(language, "", "error", ms,
                               f"the reader gave no English ({english!r}): searched as written")
        with self._lock:
            self._cache[key] = english
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return Translation(language, english, "done", ms)


    def deadline_s(self, text: str, settings) -> float:
        """Seconds the translation of `text` may take: `deadline_s`, plus reading its prompt at the
        measured rate (none before a measurement)."""
        reading = self.pace.expected_s(sum(count_tokens(m["content"]) for m in messages(text))) if self.pace else None
        return settings.deadline_s + (reading or 0.0)


def ask(reader: Reader, text: str, settings, deadline: float) -> tuple[list[str], str]:
    """The reader's translation of `text`, in pieces, and "done" or "deadline" (rewrite.until)."""
    stream = reader.stream(messages(text), max_tokens=settings.max_tokens, temperature=0.0)
    return until(stream, deadline)


def by_sentence(reader: Reader, text: str, settings, deadline: float) -> str:
    """The message translated a sentence at a time ('' past the deadline): a small reader given a
    long message sometimes translates only its last sentence."""
    out = []
    for sentence in split_sentences(text, style="message"):
        pieces, status = ask(reader, sentence, settings, deadline)
        if status != "done":
            return ""
        out.append(clean("".join(pieces)))
    return " ".join(part for part in out if part)


def incomplete(typed: str, english: str) -> bool:
    """Whether `english` is too short to be the whole of `typed` (SHORT_SHARE)."""
    words = len(typed.split())
    return words >= SHORT_FROM_WORDS and len(english.split()) < SHORT_SHARE * words


def keep_names(typed: str, english: str) -> str:
    """`english` with the identifiers and acronyms of `typed` it misspelt put back ("TEEVV" for
    "TEVV"), and the framework ids it dropped appended: they are the strongest search terms
    (query.py), and a name the corpus never mentions counts against a question at the gate.
    Acronyms translated away (KI, EE. UU., RRHH) are left as translated."""
    ours = [i for i in identifiers(typed) if i not in ("KI", "IA")]
    theirs = identifiers(english)
    missing = [i for i in ours if i.lower() not in english.lower()]
    invented = [i for i in theirs if i.lower() not in typed.lower() and i != "AI"]
    for ident in missing:
        near = next((w for w in invented if _near(w, ident)), None)
        if near is not None:
            english = re.sub(rf"(?<![\w.-]){re.escape(near)}(?![\w-])", ident, english)
            invented.remove(near)
        elif is_framework_id(ident):
            english = f"{english} ({ident})"
    return english


def _near(a: str, b: str) -> bool:
    """One letter added, dropped or changed (TEEVV / TEVV, GOVRN / GOVERN), in names of four
    letters or more: in shorter ones one letter makes another name (US / UU)."""
    a, b = a.upper(), b.upper()
    if abs(len(a) - len(b)) > 1 or a == b or min(len(a), len(b)) < 4:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[i + 1:] == b[i + 1:] or a[i + 1:] == b[i:] or a[i:] == b[i + 1:]


def messages(text: str) -> list[dict]:
    """The chat the reader translates `text` in: the instruction, the worked examples, the text."""
    shots = [m for q, a in EXAMPLES for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})]
    return [{"role": "system", "content": PROMPT}, *shots, {"role": "user", "content": neutralise(text)}]


def clean(text: str) -> str:
    """The translation's first line, without the quotes or label a small reader may add, and with
    the German and French/Spanish word for AI (KI, IA) that it sometimes keeps written as AI."""
    line = next((ln for ln in (text or "").strip().splitlines() if ln.strip()), "")
    line = re.sub(r"^\s*(?:english|translation)\s*:\s*", "", line, flags=re.IGNORECASE)
    line = re.sub(r"\b(?:KI|IA)\b", "AI", line, flags=re.IGNORECASE)
    return line.strip().strip('"\'“”').strip()

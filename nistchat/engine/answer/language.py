"""The language an answer should be written in: the question's own, or the one it asks for.

Why: the passages are English, so a small reader answers a Spanish, German or French question in
English unless told otherwise. A request for a language ("auf deutsch", "in English please")
wins over the language the question is typed in. Detection counts each language's commonest
function words: enough for a question of a few words, and no model call.
"""
from __future__ import annotations

import re

# Function words frequent in questions and rare in English ones.
_WORDS = {
    "Spanish": {"el", "los", "las", "del", "que", "qué", "cuál", "cuáles", "cómo", "cuántos", "cuántas", "dónde",
                "por", "para", "una", "es", "son", "se", "con", "ellas", "ellos", "sobre", "y", "pero", "también",
                "puedes", "dice", "hay", "según"},
    "German": {"der", "die", "das", "den", "dem", "des", "und", "ist", "sind", "was", "wie", "welche", "welcher",
               "wer", "warum", "gibt", "es", "ein", "eine", "einen", "mir", "du", "ich", "im", "zum", "zur", "mit",
               "nicht", "auch", "kannst", "darin", "viele", "waren", "hat", "für"},
    "French": {"le", "la", "les", "des", "du", "est", "sont", "que", "qui", "quel", "quelle", "quels", "quelles",
               "comment", "pourquoi", "une", "et", "avec", "pour", "dans", "sur", "ce", "cette", "svp", "il", "elle",
               "vous", "peux", "combien", "où"},
}
_ENGLISH = {"the", "what", "which", "is", "are", "does", "do", "how", "why", "who", "and", "of", "in", "for", "it",
            "this", "that", "to", "about", "can", "say", "me", "with"}
_ASKED = {
    "English": re.compile(r"\b(?:in english|auf englisch|en ingl[eé]s|en anglais)\b", re.IGNORECASE),
    "Spanish": re.compile(r"\b(?:in spanish|en espa[nñ]ol|auf spanisch|en espagnol)\b", re.IGNORECASE),
    "German": re.compile(r"\b(?:in german|auf deutsch|en alem[aá]n|en allemand)\b", re.IGNORECASE),
    "French": re.compile(r"\b(?:in french|en fran[cç]ais|auf franz[oö]sisch|en franc[eé]s)\b", re.IGNORECASE),
}


def answer_language(question: str) -> str:
    """The language to answer in, when not English: 'Spanish', 'German' or 'French'; '' for English."""
    asked = [name for name, rx in _ASKED.items() if rx.search(question or "")]
    if asked:
        return "" if asked[0] == "English" else asked[0]
    words = re.findall(r"[^\W\d_]+", (question or "").lower())
    english = sum(w in _ENGLISH for w in words)
    counts = {name: sum(w in vocab for w in words) for name, vocab in _WORDS.items()}
    best = max(counts, key=counts.get)
    return best if counts[best] >= 2 and counts[best] > english else ""

"""The language an answer should be written in: the question's own, or the one it asks for.

Why: the passages are English, so a small reader answers a Spanish, German or French question in
English unless told otherwise. A request for a language ("auf deutsch", "in English please")
wins over the language the question is typed in (retrieval/translate.py's `typed_language`, which
retrieval also uses to search such a question in English).
"""
from __future__ import annotations

import re

from ..retrieval.translate import typed_language

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
    return typed_language(question)

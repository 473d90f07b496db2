"""The language an answer should be written in: the question's own, or the one it asks for.

Why: the passages are English, so a small reader answers a Spanish, German or French question in
English unless told otherwise. A request for a language ("auf deutsch", "in English please")
wins over the language the question is typed in (retrieval/translate.py's `typed_language`, which
retrieval also uses to search such a question in English).
"""
from __future__ import annotations

from ..retrieval.translate import asked_language, typed_language
from ..verification.premise import quote

# The line that quotes the English sentence an answer in another language rests on: the reader
# translates, the checker and the person checking the source read English.
SOURCE_LINE = {"German": 'Quelle (englisches Original): "{quote}" [{n}]',
               "Spanish": 'Fuente (original en inglés): "{quote}" [{n}]',
               "French": 'Source (original en anglais) : "{quote}" [{n}]'}


def answer_language(question: str) -> str:
    """The language to answer in, when not English: 'Spanish', 'German' or 'French'; '' for English."""
    asked = asked_language(question)
    if asked:
        return "" if asked == "English" else asked
    return typed_language(question)


def source_line(language: str, number: int, sentence: str) -> str:
    """The English sentence quoted under an answer in `language`, cited as passage `number`."""
    return SOURCE_LINE[language].format(quote=quote(sentence), n=number)

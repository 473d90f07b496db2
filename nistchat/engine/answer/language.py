"""The language an answer should be written in: the question's own, or the one it asks for; and
the words the project itself says in each (the source line under an answer, a refusal).

Why: the passages are English, so a small reader answers a Spanish, German or French question in
English unless told otherwise. A request for a language ("auf deutsch", "in English please")
wins over the language the question is typed in (retrieval/translate.py's `typed_language`, which
retrieval also uses to search such a question in English).
"""
from __future__ import annotations

from ..retrieval.translate import asked_language, typed_language
from ..text import SOURCE_LINE
from ..verification.premise import quote

# A refusal's words in each language an answer is written in ('' is English; answer/refusal.py), and
# the lead-in of a list's rest named under an answer (answer/complete.py):
# asked in Spanish, a person is told in Spanish why there is no answer. Document titles and
# section names stay as the documents write them.
WORDING = {
    "": {"opening": "I can't answer that from the NIST documents I have", "covers": "They cover:",
         "closest": "Closest sources:", "off_topic": "the question looks outside what they cover",
         "reader_declined": "the passages found do not answer it",
         "nothing_to_rewrite": "the question before has no answer to rewrite: ask it again in other words",
         "unsupported": "nothing in the drafted answer could be checked against the passages",
         "rest": "The list in [{n}] also names:"},
    "German": {"opening": "Das kann ich aus den NIST-Dokumenten, die mir vorliegen, nicht beantworten",
               "covers": "Sie behandeln:", "closest": "Nächstliegende Quellen:",
               "off_topic": "die Frage scheint außerhalb dessen zu liegen, was sie behandeln",
               "reader_declined": "die gefundenen Textstellen beantworten sie nicht",
               "nothing_to_rewrite": "die vorige Frage hat keine Antwort zum Umschreiben: stellen Sie sie mit "
                                     "anderen Worten neu",
               "unsupported": "nichts in der entworfenen Antwort ließ sich an den Textstellen prüfen",
               "rest": "Die Liste in [{n}] nennt außerdem:"},
    "Spanish": {"opening": "No puedo responder a eso con los documentos del NIST que tengo", "covers": "Tratan:",
                "closest": "Fuentes más cercanas:", "off_topic": "la pregunta parece quedar fuera de lo que tratan",
                "reader_declined": "los pasajes encontrados no la responden",
                "nothing_to_rewrite": "la pregunta anterior no tiene respuesta que reescribir: hágala de nuevo con "
                                      "otras palabras",
                "unsupported": "nada de la respuesta redactada pudo comprobarse con los pasajes",
                "rest": "La lista de [{n}] también nombra:"},
    "French": {"opening": "Je ne peux pas répondre à cela à partir des documents du NIST dont je dispose",
               "covers": "Ils traitent :", "closest": "Sources les plus proches :",
               "off_topic": "la question semble sortir de ce qu'ils traitent",
               "reader_declined": "les passages trouvés n'y répondent pas",
               "nothing_to_rewrite": "la question précédente n'a pas de réponse à reformuler : posez-la autrement",
               "unsupported": "rien dans la réponse rédigée n'a pu être vérifié dans les passages",
               "rest": "La liste en [{n}] nomme aussi :"},
}


def answer_language(question: str) -> str:
    """The language to answer in, when not English: 'Spanish', 'German' or 'French'; '' for English."""
    asked = asked_language(question)
    if asked:
        return "" if asked == "English" else asked
    return typed_language(question)


def asks_for_english(question: str) -> bool:
    """The question asks in words for an English answer ("auf englisch bitte", "same in english"):
    the reader is told so, as a turn before may have been answered in another language."""
    return asked_language(question) == "English"


def source_line(language: str, number: int, sentence: str) -> str:
    """The English sentence quoted under an answer in `language`, cited as passage `number`."""
    return SOURCE_LINE[language].format(quote=quote(sentence), n=number)

"""Questions in other languages on the real index, embedder and 0.5B reader: translated for the
search while the reader is idle, bounded by a deadline, remembered, shown in the trace; searched as
written when no translation comes; and the gate does not refuse them for words the English corpus
lacks."""
from __future__ import annotations

import dataclasses
import time

import pytest

from nistchat.engine.backends.queue import ReaderQueue
from nistchat.engine.evaluation.retrieval import missing_evidence
from nistchat.engine.retrieval import Translator, typed_language
from nistchat.engine.retrieval.translate import by_sentence, clean, incomplete, keep_names

SPANISH = "¿cuáles son las características de los sistemas de IA confiables?"
GERMAN = "Welche Merkmale haben vertrauenswürdige KI-Systeme laut dem Rahmenwerk?"  # every noun capitalised
# what the AI RMF lists as trustworthy AI's characteristics (evidence, as the evaluations match it)
EVIDENCE = ["valid and reliable, safe, secure and resilient, accountable and transparent"]


@pytest.fixture
def roomy(runtime):
    """`[retrieval.translate]` with room for a busy test machine: this is not about timing."""
    return dataclasses.replace(runtime.settings.retrieval.translate, deadline_s=120.0)


def test_the_language_a_question_is_typed_in():
    assert typed_language(SPANISH) == "Spanish" and typed_language(GERMAN) == "German"
    assert typed_language("quelles sont les fonctions du cadre et qui les applique ?") == "French"
    for english in ("What does GOVERN 1.2 say?", "and for MAP?", "can you say that in German?", "auf deutsch bitte",
                    ""):
        assert typed_language(english) == "", english


def test_a_reply_is_cleaned_to_one_english_line():
    assert clean('"Which features do trustworthy KI-systems have?"\nThat is the translation.') == \
        "Which features do trustworthy AI-systems have?"
    assert clean("English: what is IA governance?") == "what is AI governance?"


def test_names_the_translation_misspelt_come_back_and_translated_acronyms_stay():
    typed = "¿quién hace las tareas de TEVV antes del despliegue, según el RMF?"
    assert keep_names(typed, "who does the TEEVV tasks before deployment, according to the RMF?") == \
        "who does the TEVV tasks before deployment, according to the RMF?"
    assert keep_names("¿qué pide GOVERN 1.2 a la KI?", "what does it ask of AI?") == "what does it ask of AI? (GOVERN 1.2)"
    assert keep_names("los EE. UU. y RRHH", "the US and HR") == "the US and HR"  # two letters: not a misspelling
    assert keep_names("was sagt MEASURE 2.7?", "what does MEASURE 2.7 say?") == "what does MEASURE 2.7 say?"


def test_a_translation_that_left_a_sentence_out_is_told_from_a_whole_one():
    typed = ("nous avons ouvert l'outil interne à tout le service juridique la semaine dernière. "
             "est-ce que le cadre demande une revue avant ?")
    assert incomplete(typed, "does the framework ask for a review first?")
    assert not incomplete(typed, "we opened the internal tool to the whole legal department last week. "
                                 "does the framework ask for a review first?")
    assert not incomplete("und für MAP?", "and for MAP?")  # short messages: the share means nothing


def test_a_long_message_is_translated_a_sentence_at_a_time_when_asked(runtime, roomy):
    """The path taken when one call left a sentence out: every sentence comes back in English."""
    typed = ("nuestro equipo publica un modelo nuevo cada semana para el chatbot interno. "
             "¿qué dice el informe de monitoreo sobre vigilar el modelo después del despliegue?")
    whole = by_sentence(runtime.models.reader(), typed, roomy, time.perf_counter() + 120)
    assert whole and not typed_language(whole) and not incomplete(typed, whole), whole
    assert "monitor" in whole.lower() and "model" in whole.lower(), whole


def test_the_reader_translates_remembers_and_is_bounded(runtime, roomy):
    translator = Translator(runtime.models.reader, ReaderQueue())
    first = translator(SPANISH, roomy)
    assert first.language == "Spanish" and first.status == "done", first
    assert first.text and not typed_language(first.text) and "AI" in first.text, first
    t = time.perf_counter()
    again = translator(SPANISH, roomy)
    assert again.status == "cached" and again.text == first.text and time.perf_counter() - t < 0.05
    assert translator("What does GOVERN 1.2 say?", roomy).status == "english"  # English: no reader call
    assert translator(GERMAN, dataclasses.replace(roomy, enabled=False)).status == "off"
    cut = translator(GERMAN, dataclasses.replace(roomy, deadline_s=0.2, max_tokens=400))
    assert cut.status == "deadline" and cut.text == "", cut  # half a translation is not searched


def test_of_a_translations_names_the_gate_counts_those_typed():
    from nistchat.engine.answer.refusal import typed_names

    assert typed_names(["Bavaria", "SOX"], "was sagt SOX über Bayern?") == ["SOX"]
    assert typed_names(["0.7", "ISO-9001"], "un seuil de 0,7 pour ISO-9001 ?") == ["0.7", "ISO-9001"]
    assert typed_names(["AI"], "¿qué es la IA?") == [] and typed_names(["SB"], "sbom") == []  # whole names only


def test_the_deadline_adds_reading_the_prompt_at_the_measured_rate():
    """A slower CPU reads the translation's prompt for longer; the writing gets deadline_s on any."""
    from nistchat.engine.backends.base import Pace
    from nistchat.engine.retrieval.translate import messages
    from nistchat.engine.text import count_tokens

    settings = type("S", (), {"deadline_s": 8.0})()
    pace = Pace(60.0, 900.0)
    translator = Translator(lambda: None, ReaderQueue(), pace)
    assert translator.deadline_s(GERMAN, settings) == 8.0  # nothing measured yet
    tokens = sum(count_tokens(m["content"]) for m in messages(GERMAN))
    pace.observe(tokens, 2.0)  # this machine reads the prompt in 2 s
    assert translator.deadline_s(GERMAN, settings) == pytest.approx(10.0)
    pace.observe(tokens, 12.0)  # a busier one: the moving average rises, so does the deadline
    assert translator.deadline_s(GERMAN, settings) > 10.0
    assert Translator(lambda: None, ReaderQueue()).deadline_s(GERMAN, settings) == 8.0  # no pace given


def test_a_busy_reader_is_not_waited_for():
    def never():
        raise AssertionError("the reader was called while an answer held it")

    queue = ReaderQueue()
    held = queue.take()
    assert queue.acquire(held, timeout=1)
    out = Translator(never, queue)(GERMAN, type("S", (), {"enabled": True, "max_tokens": 8, "deadline_s": 5})())
    assert out.status == "busy" and out.text == "" and "searched as written" in out.note
    queue.finish(held)


def test_a_question_in_another_language_is_searched_in_english_and_the_trace_says_so(runtime, monkeypatch):
    monkeypatch.setattr(runtime.settings.retrieval.translate, "deadline_s", 120.0)
    assert runtime.retriever.config is runtime.settings.retrieval
    as_written = runtime.retriever.with_config(translate={"enabled": False}).retrieve(SPANISH)
    r = runtime.retrieve(SPANISH)
    assert r.question == SPANISH and r.english and not typed_language(r.english)
    stage = r.trace.stage("translate")
    assert stage.items[0]["language"] == "Spanish" and stage.items[0]["text"] == r.english
    assert any(n.startswith(f"typed in Spanish: searched as its English translation {r.english!r}")
               for n in r.trace.notes), r.trace.notes
    assert r.trace.stage("query").items[0]["search_text"] == r.english
    assert not missing_evidence(EVIDENCE, [p.text for p in r.passages])  # the English finds it ...
    assert missing_evidence(EVIDENCE, [p.text for p in as_written.passages])  # ... the Spanish alone does not
    assert as_written.english == "" and "searched as written (off" in as_written.trace.stage("translate").note
    # a follow-up in English leans on the earlier question as translated (remembered: no reader call)
    follow = runtime.retrieve("and which of them is hardest to measure?",
                              history=[{"role": "user", "content": SPANISH}, {"role": "assistant", "content": "..."}])
    stage = follow.trace.stage("translate")
    assert follow.english == "" and [i["status"] for i in stage.items] == ["english", "cached"]
    assert stage.note == "searched in English; 1 earlier question(s) of the conversation in English"
    assert follow.followup.question.startswith(r.english)


def test_the_gate_judges_a_translated_question_by_its_english_and_an_untranslated_one_by_no_words(runtime):
    pipeline = runtime.pipeline
    untranslated = runtime.retriever.with_config(translate={"enabled": False}).retrieve(GERMAN)
    g = pipeline.refusal_gate(untranslated)
    assert not g.refuse and g.unknown_terms == [], g  # "Merkmale", "Rahmenwerk", "KI-Systeme": not names
    typed = dataclasses.replace(untranslated, question="welche Merkmale nennt der Colorado AI Act?",
                                english="Which features does the Colorado AI Act name?")
    assert pipeline.refusal_gate(typed).unknown_terms == ["Colorado"]  # typed, and never in the corpus: it counts
    brought = dataclasses.replace(untranslated, english="Which features do trustworthy AI systems have in Bavaria?")
    assert pipeline.refusal_gate(brought).unknown_terms == []  # a name only the translation has is not the person's
    # a request for a language names no topic
    assert pipeline.refusal_gate(dataclasses.replace(untranslated, english="and in German?")).unknown_terms == []

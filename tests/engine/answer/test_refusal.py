"""The pre-generation gate and the refusal message (threshold itself: scripts/calibrate_refusal.py)."""
from nistchat.config import load_settings
from nistchat.config import RefusalSettings
from nistchat.engine.answer.refusal import covers, gate, message
from nistchat.engine.types import Passage, Retrieval, Trace

REFUSAL_THRESHOLD = 0.5  # the low-score rule is off by default; these tests turn it on at this value


def retrieval(top_score, passages=True):
    trace = Trace()
    trace.add("dense", 1.0, [{"rank": 1, "score": top_score}, {"rank": 2, "score": top_score - 0.1}])
    ps = [Passage(1, "p1", "NIST.AI.600-1", "GenAI Profile", "Risks > Data Privacy", "prose", 12, "t", 0.1)]
    return Retrieval("q", ps if passages else [], trace, {})


def with_threshold(tmp_path):
    return load_settings(instance_dir=tmp_path, environ={}, overrides={"refusal.threshold": REFUSAL_THRESHOLD})


def test_a_low_score_alone_never_refuses_by_default(tmp_path):
    settings = load_settings(instance_dir=tmp_path, environ={})
    assert settings.refusal.threshold == 0.0
    assert not gate(retrieval(0.2), settings).refuse
    assert gate(retrieval(0.9, passages=False), settings).refuse


def test_gate_refuses_below_threshold_only(tmp_path):
    settings = with_threshold(tmp_path)
    assert gate(retrieval(REFUSAL_THRESHOLD - 0.05), settings).refuse
    assert not gate(retrieval(REFUSAL_THRESHOLD + 0.05), settings).refuse
    assert gate(retrieval(0.9, passages=False), settings).refuse


def test_threshold_override_from_settings(tmp_path):
    settings = load_settings(instance_dir=tmp_path, environ={}, overrides={"refusal.threshold": 0.95})
    g = gate(retrieval(0.9), settings)
    assert g.refuse and g.threshold == 0.95 and g.feature == "dense_max"


def test_message_says_what_is_covered_and_the_closest_sources(index):
    text = message(retrieval(0.5).passages, "off topic", index)
    assert "off topic" in text and "[1] NIST.AI.600-1, Risks > Data Privacy (p. 12)" in text
    assert len(covers(index)) == 7 and all(doc in text for doc in covers(index))
    assert "NIST AI 100-1, Artificial Intelligence Risk Management Framework (AI RMF 1.0)" in text
    assert "NIST AI 800-4, Challenges to the Monitoring of Deployed AI Systems" in text


def test_a_refusal_is_worded_in_the_language_the_answer_is_written_in(index):
    passages = retrieval(0.5).passages
    for language, opening, covers_word, closest in (
            ("German", "Das kann ich aus den NIST-Dokumenten", "Sie behandeln: ", "Nächstliegende Quellen: [1]"),
            ("French", "Je ne peux pas répondre", "Ils traitent : ", "Sources les plus proches : [1]"),
            ("Spanish", "No puedo responder", "Tratan: ", "Fuentes más cercanas: [1]")):
        text = message(passages, "reader_declined", index, language)
        assert text.startswith(opening) and covers_word in text and closest in text
        assert "passages found" not in text and all(doc in text for doc in covers(index))  # titles as written
    assert "(the passages found do not answer it)." in message(passages, "reader_declined", index)


def test_a_document_added_to_the_corpus_is_listed_with_no_code_change(tiny_index):
    text = message([], "off topic", tiny_index)
    assert covers(tiny_index) == ["NIST AI 999-9, Guidance on Widget Assurance",
                                  "Concept Note: Artificial Intelligence Risk Management Framework: Trustworthy AI "
                                  "in Critical Infrastructure Profile"]
    assert "They cover: NIST AI 999-9, Guidance on Widget Assurance; Concept Note: " in text


def test_unknown_named_term_refuses_only_with_a_middling_score(tmp_path):
    from nistchat.engine.answer.refusal import named_terms, unknown_terms
    UNKNOWN_TERM_THRESHOLD = RefusalSettings().unknown_term_threshold

    settings = load_settings(instance_dir=tmp_path, environ={})
    vocab = {"nist", "govern", "1.2", "ai", "rmf"}
    assert named_terms("What does GOVERN 1.2 say about Acme and AI?") == ["GOVERN", "1.2", "Acme", "AI"]
    assert unknown_terms("What does GOVERN 1.2 say about Acme and AI?", vocab) == ["Acme"]
    r = retrieval(UNKNOWN_TERM_THRESHOLD - 0.01)
    r.question = "Which HIPAA identifiers must be removed?"
    g = gate(r, settings, vocab=vocab)
    assert g.refuse and g.rule == "unknown_term" and g.unknown_terms == ["HIPAA"]
    r = retrieval(UNKNOWN_TERM_THRESHOLD + 0.01)
    r.question = "Which HIPAA identifiers must be removed?"
    assert not gate(r, settings, vocab=vocab).refuse  # strong retrieval: the unknown name alone is not enough


def test_a_word_joined_to_a_known_acronym_is_not_a_name_the_corpus_lacks():
    from nistchat.engine.answer.refusal import unknown_terms

    vocab = {"tevv", "evaluation", "ci", "ml", "sp", "800", "53", "id"}
    # a translation that keeps a German compound, or a person who joins words with a slash
    assert unknown_terms("Was sagt der CI-leitfaden über evaluation/TEVV?", vocab) == []
    assert unknown_terms("Is the ML-gruppe responsible?", vocab) == []
    # the acronym decides: an unknown one still counts, and an id with a digit is judged whole
    assert unknown_terms("Is our pipeline HIPAA-compliant and ML/GDPR ready?", vocab) == [
        "HIPAA-compliant", "ML/GDPR"]
    assert unknown_terms("Which control-IDs of SP 800-53 apply?", vocab) == ["800-53"]
    assert unknown_terms("What about Acme-Widgets?", vocab) == ["Acme-Widgets"]  # no acronym: the whole


def test_a_passage_stating_the_questions_framework_id_exempts_it_from_the_score_rule(tmp_path):
    from nistchat.engine.answer.refusal import stated_ids

    settings = with_threshold(tmp_path)
    stating = [Passage(1, "p1", "NIST.AI.600-1", "GenAI Profile", "MAP 5.1", "table", 40,
                       "MAP 5.1: Likelihood and magnitude of each identified impact ... chaos testing", 0.1)]
    low = retrieval(REFUSAL_THRESHOLD - 0.05)
    low.passages = stating
    low.question = "Which action under MAP 5.1 calls for chaos testing?"
    g = gate(low, settings)
    assert not g.refuse and g.stated_ids == ["MAP 5.1"]
    low.question = "Which action under MAP 5.12 calls for chaos testing?"  # an id no passage states
    assert gate(low, settings).refuse and gate(low, settings).rule == "low_score"
    low.question = "Which action under MAP calls for chaos testing?"  # no id at all
    assert gate(low, settings).refuse
    assert stated_ids("What does GOVERN 1.2 say?", [Passage(1, "p", "d", "t", "s", "prose", None,
                                                             "GOVERN 1.2.3 and GOVERN 1.20", 0.1)]) == []

"""The shared text helpers: sentence styles, token units, framework identifiers, word n-grams."""
import pytest

from nistchat.engine.text import (ends_with_label, estimate_tokens, identifier_regex, is_framework_id,
                                  line_sentences, ngrams, split_sentences)


# -- "answer" style: drafts and passages checked claim by claim

def test_abbreviations_do_not_end_sentences():
    text = "Use safeguards, e.g. red-teaming, i.e. adversarial testing [1]. The U.S. government agrees. Done."
    assert split_sentences(text) == [
        "Use safeguards, e.g. red-teaming, i.e. adversarial testing [1].",
        "The U.S. government agrees.", "Done."]


def test_identifier_labels_stay_with_their_text():
    text = "GOVERN 1.2. The characteristics of trustworthy AI are integrated [2]. See also MAP 5.1 now."
    assert split_sentences(text) == ["GOVERN 1.2. The characteristics of trustworthy AI are integrated [2].",
                                     "See also MAP 5.1 now."]


def test_decimals_and_section_numbers_are_not_boundaries():
    assert split_sentences("AI RMF 1.0 was released in 2023. Version 1.1 is planned.") == [
        "AI RMF 1.0 was released in 2023.", "Version 1.1 is planned."]


def test_list_items_are_sentences_and_keep_their_markers():
    text = "The categories are:\n1. Functionality monitoring [1].\n2. Security monitoring.\n- Compliance. Also [2]."
    assert split_sentences(text) == ["The categories are:", "1. Functionality monitoring [1].",
                                     "2. Security monitoring.", "- Compliance. Also [2]."]
    assert line_sentences("- Compliance. Also [2].") == ["- Compliance.", "Also [2]."]  # one line, marker not special


def test_citation_after_the_period_belongs_to_the_sentence_before():
    assert split_sentences("It ends here. [3] Next one! Really?") == ["It ends here. [3]", "Next one!", "Really?"]


# -- "chunk" style: chunk boundaries

def test_chunk_style_keeps_abbreviations_and_collapses_whitespace():
    text = "Attacks exist, e.g. evasion. Mitigations (i.e. defenses) follow. See Fig. 3 for more. Done."
    assert split_sentences(text, style="chunk") == ["Attacks exist, e.g. evasion.",
                                                    "Mitigations (i.e. defenses) follow.",
                                                    "See Fig. 3 for more.", "Done."]
    assert split_sentences("One line\n  wrapped here.\nNext.", style="chunk") == ["One line wrapped here.", "Next."]
    assert split_sentences(" \n ", style="chunk") == []


# -- "message" style: what a person typed, lower case and all

def test_message_style_splits_before_lower_case_but_not_after_a_one_letter_word():
    typed = "nous avons ouvert l'outil au service. est-ce que c'est la solution, e.g. pour GOVERN 1.2 ? oui"
    assert split_sentences(typed, style="message") == [
        "nous avons ouvert l'outil au service.", "est-ce que c'est la solution, e.g. pour GOVERN 1.2 ?", "oui"]
    assert split_sentences("", style="message") == []


# -- "plain" style: trim units, text verbatim

def test_plain_style_splits_on_any_end_mark_and_keeps_the_text():
    assert split_sentences("See e.g. Table 1.  Then  more! (And) this", style="plain") == [
        "See e.g.", "Table 1.", "Then  more!", "(And) this"]
    assert split_sentences("", style="plain") == []


def test_plain_style_does_not_end_a_sentence_at_et_al():
    """A citation after "et al." belongs to its sentence: cut there, a trimmed passage kept
    "[6] have shown …" with no subject, or a dangling "Smith et al."."""
    text = "Gears wear. Smith et al. [6] have shown why. Jones et al. (2023) agree. Done."
    assert split_sentences(text, style="plain") == [
        "Gears wear.", "Smith et al. [6] have shown why.", "Jones et al. (2023) agree.", "Done."]


def test_the_styles_differ_where_they_are_meant_to():
    text = "Tests include, e.g. Red teams. Next line"
    assert len(split_sentences(text)) == 2 and len(split_sentences(text, style="chunk")) == 2
    assert split_sentences(text, style="plain") == ["Tests include, e.g.", "Red teams.", "Next line"]
    with pytest.raises(ValueError, match="sentence style"):
        split_sentences(text, style="prose")


# -- token estimates

def test_token_units():
    text = "GOVERN 1.2: trustworthy AI, integrated."
    assert estimate_tokens(text, by="words") == int(5 * 1.3) + 1 == 7
    assert estimate_tokens(text, by="pieces") == 10  # GOVERN 1 . 2 : trustworthy AI , integrated .
    assert estimate_tokens("", by="words") == 1 and estimate_tokens("", by="pieces") == 0
    for gone in ("bpe", "chars"):  # one unit per job (docs/decisions.md)
        with pytest.raises(ValueError, match="token unit"):
            estimate_tokens(text, by=gone)
    with pytest.raises(TypeError):
        estimate_tokens(text)  # the unit is always named


# -- framework identifiers

def test_identifier_regex_matches_whole_ids_only():
    rx = identifier_regex("GOVERN 1.2")
    assert rx.search("see govern   1.2 here") and rx.search("(GOVERN 1.2).")
    assert not rx.search("GOVERN 1.2.3") and not rx.search("GOVERN 1.20") and not rx.search("XGOVERN 1.2")
    assert identifier_regex("PW.1.1").search("task PW.1.1: do") and not identifier_regex("PW.1.1").search("PW.1.1-x")


def test_framework_ids_and_labels():
    for ident in ("GOVERN 1.2", "MAP 5", "PW.1.1", "PO.1.2.R1", "MP-5.1-005", "GV-1.2-001"):
        assert is_framework_id(ident), ident
    for other in ("GAI", "1.2", "DP-SGD", "AI 600-1"):
        assert not is_framework_id(other), other
    assert ends_with_label("See GOVERN 1.2.".split()) and ends_with_label(["(PW", "4."])
    assert not ends_with_label(["released", "2023."]) and not ends_with_label(["1.2."])


# -- word n-grams

def test_ngrams():
    words = "a b c d".split()
    assert ngrams(words) == [("a", "b", "c"), ("b", "c", "d")]
    assert ngrams(words, 2) == [("a", "b"), ("b", "c"), ("c", "d")]
    assert ngrams(["a", "b"]) == [] and ngrams([]) == []
    assert ngrams(["a", "b"], short_whole=True) == [("a", "b")] and ngrams([], short_whole=True) == []
    assert ngrams(words, short_whole=True) == ngrams(words)

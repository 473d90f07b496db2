"""Every [n] in a final answer points to a shown passage; bad ones are repaired or dropped."""
from nistchat.engine.verification.citations import has_mark, invalid, repair, sentences_with_invalid, source_list
from nistchat.engine.types import Passage, Verdict


def P(i, page=3):
    return Passage(rank=i, id=f"p{i}", doc="NIST.AI.800-4", title="Monitoring", section=f"Sec {i}", kind="prose",
                   page=page, text=f"text {i}", score=0.5)


def test_invalid_numbers_are_found():
    assert invalid("A [1]. B [7]. C [2, 0].", 3) == [7, 0]
    assert invalid("A [1]. B [3].", 3) == []


def test_out_of_range_citation_maps_to_the_supporting_passage():
    text = "Security monitoring detects attacks [9]. Bias is systemic [1]."
    fixed = repair(text, 3, [Verdict("Security monitoring detects attacks [9].", True, 2)])
    assert fixed.text == "Security monitoring detects attacks [2]. Bias is systemic [1]."
    assert fixed.mapped == [(9, 2)] and fixed.dropped == []


def test_unsupported_out_of_range_citation_is_dropped():
    fixed = repair("Claim one [4]. Claim two [2, 8].", 3, [Verdict("Claim one [4].", False, None)])
    assert fixed.text == "Claim one. Claim two [2]."
    assert fixed.dropped == [4, 8]


def test_the_marks_inside_a_quoted_passage_are_its_own_and_stay():
    """A quote of a passage keeps the document's reference numbers as written; repaired, "[74]"
    became "[2]", a citation to a passage the quote did not make."""
    text = 'The sources say: "Smith [74] showed that gears [46, 47] wear." [2] Gears wear [9].'
    fixed = repair(text, 3, [Verdict('The sources say: "Smith [74] showed that gears [46, 47] wear." [2]', True, 2),
                             Verdict("Gears wear [9].", True, 1)])
    assert fixed.text == 'The sources say: "Smith [74] showed that gears [46, 47] wear." [2] Gears wear [1].'
    assert fixed.mapped == [(9, 1)]


def test_a_quotes_own_marks_are_neither_bad_citations_nor_the_readers_marks():
    """The document's "[74]" inside a quote sent the sentence to the judge as a bad citation, and
    its "[3]" counted as the reader's mark, so the checker's own mark was withheld."""
    text = 'The sources say: "Smith [74] showed that gears [3] wear." Gears wear [9].'
    assert invalid(text, 6) == [9]
    assert sentences_with_invalid(text, 6) == ["Gears wear [9]."]
    assert not has_mark('The sources say: "Smith [74] showed that gears [3] wear."', 6)
    assert has_mark('The sources say: "gears wear" [3].', 6)
    assert has_mark("Gears wear [3].", 6)


def test_valid_text_is_untouched():
    text = "1. Functionality [1].\n2. Security [2, 3]."
    fixed = repair(text, 3)
    assert fixed.text == text and not fixed.changed


def test_sources_list_doc_title_section_page_and_what_is_cited():
    rows = source_list([P(1), P(2, page=None)], "Claim [2].")
    assert [(r.rank, r.doc, r.title, r.section, r.page, r.cited) for r in rows] == [
        (1, "NIST.AI.800-4", "Monitoring", "Sec 1", 3, False), (2, "NIST.AI.800-4", "Monitoring", "Sec 2", None, True)]


def Q(i, text):
    return Passage(rank=i, id=f"q{i}", doc="NIST.AI.100-1", title="AI RMF", section=f"Sec {i}", kind="prose",
                   page=None, text=text, score=0.5)


QUOTED = [Q(1, "The GOVERN function cultivates a culture of risk management within organizations."),
          Q(2, "The MAP function establishes the context to frame risks related to an AI system.")]


def test_an_unmarked_supported_sentence_gets_the_checkers_passage_and_a_marked_one_does_not():
    from nistchat.engine.verification.citations import checker_marks, marked_share
    answer = "Risk is framed in context by mapping it. Governance builds a risk culture [1]. It is voluntary."
    verdicts = [Verdict("Risk is framed in context by mapping it.", True, 2),
                Verdict("Governance builds a risk culture [1].", True, 1),
                Verdict("It is voluntary.", False, None)]
    marks = checker_marks(answer, QUOTED, verdicts)
    assert marks == {"Risk is framed in context by mapping it.": 2}  # the rejected one gets none
    assert marked_share(answer, 2, marks) == (3, 1, 1)
    rows = source_list(QUOTED, answer, marks)
    assert rows[1].checker_sentences == ["Risk is framed in context by mapping it."] and rows[1].cited
    assert rows[0].checker_sentences == [] and rows[0].cited


def test_an_unverified_sentence_that_quotes_a_passage_gets_its_mark_for_free():
    from nistchat.engine.verification.citations import checker_marks
    answer = ("The MAP function establishes the context to frame risks related to an AI system. "
              "Organizations should also consider many other things.")
    assert checker_marks(answer, QUOTED, []) == {
        "The MAP function establishes the context to frame risks related to an AI system.": 2}
    assert checker_marks(answer, QUOTED, [], quote_check=False) == {}
    # an out-of-range mark is no mark: the sentence still gets the checker's
    assert checker_marks("The GOVERN function cultivates a culture of risk management within organizations [9].",
                         QUOTED, [Verdict("The GOVERN function cultivates a culture of risk management within "
                                          "organizations [9].", True, 1)])

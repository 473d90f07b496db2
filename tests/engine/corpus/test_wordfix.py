"""Word repair: glued words split, split words joined, real words and identifiers left alone;
then the real corpus through both readers."""
from __future__ import annotations

import re

import pytest

from nistchat.engine.corpus import documents
from nistchat.engine.corpus.documents import parse_markdown, read_document
from nistchat.engine.corpus.wordfix import WordRepair

from tests.conftest import SHARED_CORPUS

# A small document that uses its own vocabulary often enough for the rules to trust it.
USAGE = """
Postdeployment monitoring matters. Postdeployment reviews find issues. Teams plan postdeployment audits
and postdeployment reports. The training data was large; training data matters; the context-specific
risk is real. Valid inputs, directly stated, sufficient evidence, the net work, the out come, the data
base, some times, re present. Valid results came in. Directly, data and more data. Some data in the base.
Technical staff, technical work and the life cycle of a system reported by The Verge.
It is not clear; it is not known.
"""


def fix(text: str, usage: str = USAGE) -> str:
    return WordRepair.for_texts([usage, text]).fix(text)


@pytest.mark.parametrize("glued,repaired", [
    ("We report onpostdeployment incidents.", "We report on postdeployment incidents."),
    ("Topostdeployment monitoring we add logs.", "To postdeployment monitoring we add logs."),
    ("Look at thedata first.", "Look at the data first."),
    ("We need trainingdata for this.", "We need training data for this."),
    ("A contextspecific risk.", "A context-specific risk."),
])
def test_glued_words_are_split(glued, repaired):
    assert fix(glued) == repaired


@pytest.mark.parametrize("split,repaired", [
    ("a techn ical report", "a technical report"),
    ("it has alrea dy moved", "it has already moved"),
    ("A rtificial Intelligence", "Artificial Intelligence"),
    ("a standard is no t useful", "a standard is not useful"),
    ("then t he plan", "then the plan"),
    ("the compani es that build", "the companies that build"),
    ("and monitorin g systems", "and monitoring systems"),
    ("after depl oyment, teams", "after deployment, teams"),
    ("to account for t heir own contexts", "to account for their own contexts"),
])
def test_split_words_are_joined(split, repaired):
    assert fix(split) == repaired


@pytest.mark.parametrize("text", [
    # dictionary words whose halves are common in the document
    "invalid indirectly insufficient network outcome database sometimes represent",
    # closed compounds the dictionary lacks, with no evidence in the document that they are two words
    "metadata workflow timestamps cyberattacks hyperparameters onboarded inpainting performant",
    # two real words are never joined
    "the life cycle, The Verge, a de sign, in valid form",
    # names with inner capitals, acronyms, identifiers, URLs, numbers
    "OpenAI ThirdParty NIST.AI.100-1 file_name v2data https://blogs.example.com/on-theissues/2025",
])
def test_real_words_and_identifiers_stay(text):
    assert fix(text) == text


def test_compounding_prefix_is_never_split_even_with_evidence():
    usage = USAGE + " hyper-parameters hyper parameters under explored"
    assert fix("tuned hyperparameters, underexplored", usage) == "tuned hyperparameters, underexplored"


def test_frequent_glued_form_is_a_word_not_an_accident():
    usage = USAGE + " inboard" * 5
    assert fix("the inboard engine", usage) == "the inboard engine"


def test_repair_is_deterministic_and_keeps_whitespace():
    text = "Teams  report\tonpostdeployment\nincidents in techn ical terms."
    first = fix(text)
    assert first == "Teams  report\ton postdeployment\nincidents in technical terms."
    assert fix(text) == first


def test_markdown_reader_repairs_text_cells_captions_and_headings():
    doc = parse_markdown("""# T

## 2. Techn ical Scope

**Table 1 Terms and their monitorin g**

| Term | Meaning |
|---|---|
| softw are debt | cost of shortcuts in alrea dy deployed systems over time |
| depl oyment | putting a system into use for real users |
""", doc_id="X")
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.heading_path == ["2. Technical Scope"]
    assert table.caption == "Table 1 Terms and their monitoring"
    assert table.header == ["Term", "Meaning"]
    assert table.rows[0][0] == "software debt" and table.rows[0][1].startswith("cost of shortcuts in already")
    assert table.rows[1][0] == "deployment"
    for damage in ("monitorin g", "softw are", "alrea dy", "depl oyment"):
        assert damage not in table.text


# ---------------------------------------------------------------------------------------------
# The real corpus

MARKDOWN = SHARED_CORPUS / "markdown"
PDF = SHARED_CORPUS / "pdf" / "NIST.AI.100-1.pdf"
needs_corpus = pytest.mark.skipif(not MARKDOWN.is_dir(), reason="shared corpus not present")

DAMAGE = {
    "NIST.AI.800-4": ["onpostdeployment", "topostdeployment", "inpostdeployment", "andpredeployment",
                      "robustpostdeployment", "compani es", "monitorin g"],
    "NIST.AI.100-5": ["techn ical", "alrea dy", "A rtificial", "st andard", "no t useful", "t hese"],
    "NIST.AI.600-1": ["depl oyment", "d ifficulty", "o r may"],
}
REAL_WORDS = ["invalid", "indirectly", "insufficient", "network", "outcome", "database", "sometimes",
              "represent", "metadata", "workflow", "dataset", "lifecycle", "hyperparameters", "cybersecurity",
              "postdeployment", "predeployment", "the", "and", "not"]


def all_text(doc) -> str:
    return "\n".join(b.text for b in doc.blocks)


def word_count(word: str, text: str) -> int:
    return len(re.findall(rf"(?<![A-Za-z]){word}(?![A-Za-z])", text, re.I))


@pytest.fixture(scope="module")
def raw_and_repaired():
    """Each corpus document parsed without and with the repair."""
    if not MARKDOWN.is_dir():
        pytest.skip("shared corpus not present")
    paths = sorted(MARKDOWN.glob("*.md")) + [PDF]
    repaired = {p.name: read_document(p) for p in paths}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(documents, "repair_words", lambda doc: doc)
        raw = {p.name: read_document(p) for p in paths}
    return raw, repaired


@needs_corpus
@pytest.mark.parametrize("doc_id", sorted(DAMAGE))
def test_corpus_damage_is_repaired(raw_and_repaired, doc_id):
    raw, repaired = raw_and_repaired
    before, after = all_text(raw[f"{doc_id}.md"]), all_text(repaired[f"{doc_id}.md"])
    for damage in DAMAGE[doc_id]:
        assert damage in before, f"fixture drift: {damage!r} no longer in the raw {doc_id}"
        assert damage not in after, damage


@needs_corpus
def test_corpus_real_words_are_unchanged(raw_and_repaired):
    raw, repaired = raw_and_repaired
    for name, doc in repaired.items():
        before, after = all_text(raw[name]), all_text(doc)
        for word in REAL_WORDS:
            # a repair may add a word ("onpostdeployment" -> "on postdeployment"), never remove one
            assert word_count(word, after) >= word_count(word, before), (name, word)
        assert len(after.split()) - len(before.split()) < 0.01 * len(before.split()), name


@needs_corpus
def test_pdf_reader_repairs_too(raw_and_repaired):
    raw, repaired = raw_and_repaired
    assert "contextspecific" in all_text(raw[PDF.name])
    assert "contextspecific" not in all_text(repaired[PDF.name])
    assert "context-specific" in all_text(repaired[PDF.name])


@needs_corpus
def test_800_4_postdeployment_counts(raw_and_repaired):
    raw, repaired = raw_and_repaired
    text = all_text(repaired["NIST.AI.800-4.md"])
    # "AIpostdeployment" stays: inner capitals mark a name the repair does not touch
    assert not re.search(r"\b[A-Z]?[a-z]+postdeployment", text)
    assert word_count("postdeployment", text) > word_count("postdeployment", all_text(raw["NIST.AI.800-4.md"]))

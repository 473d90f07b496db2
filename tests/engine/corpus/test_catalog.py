"""The document catalogue: documents and titles read from the index, labels, names that route a
question to a document."""
from nistchat.engine.corpus.catalog import Catalog, DocEntry, documents, number_of

DOCS = ["NIST.AI.100-1", "NIST.AI.600-1", "NIST.AI.800-4", "NIST.SP.800-218A", "NIST.AI.CI-Profile-Concept-Note"]
# Titles as ingestion reads them from the corpus files' first heading.
TITLES = {
    "NIST.AI.100-1": "NIST AI 100-1 Artificial Intelligence Risk Management Framework (AI RMF 1.0)",
    "NIST.AI.600-1": "NIST AI 600-1 Artificial Intelligence Risk Management Framework: Generative Artificial "
                     "Intelligence Profile",
    "NIST.AI.800-4": "AI NIST AI 800-4 Challenges to the Monitoring of Deployed AI Systems",
    "NIST.SP.800-218A": "NIST Special Publication 800 NIST SP 800-218A: Secure Software Development Practices "
                        "for Generative AI and Dual-Use Foundation Models",
    "NIST.AI.CI-Profile-Concept-Note": "Concept Note: Artificial Intelligence Risk Management Framework: "
                                       "Trustworthy AI in Critical Infrastructure Profile. ",
    "NIST.AI.100-5": "NIST AI 100-5 A Plan for Global Engagement on AI Standards",
}


def test_catalog_finds_documents_by_name_and_number():
    cat = Catalog(DOCS)
    assert cat.named("What does the Generative AI Profile say about CBRN?") == ["NIST.AI.600-1"]
    assert cat.named("In SP 800-218A, what is PW.1.1?") == ["NIST.SP.800-218A"]
    assert cat.named("per AI 800-4") == ["NIST.AI.800-4"]
    assert cat.named("How does the AI RMF relate to the GAI profile?") == ["NIST.AI.100-1", "NIST.AI.600-1"]
    assert cat.named("What are the SSDF practices?") == ["NIST.SP.800-218A"]
    assert cat.named("What is confabulation?") == []
    assert cat.named("the 800-218 series") == []  # a number is matched whole, never as a prefix
    assert number_of("NIST.AI.CI-Profile-Concept-Note") is None


def test_catalog_longest_name_wins_and_site_names_add():
    cat = Catalog([DocEntry(d, TITLES[d]) for d in DOCS], {"NIST.AI.800-4": ["the monitoring report"]})
    # "Artificial Intelligence Risk Management Framework" alone is 100-1 (its title) ...
    assert cat.named("the Artificial Intelligence Risk Management Framework") == ["NIST.AI.100-1"]
    # ... and a site-configured name routes too
    assert cat.named("What does the monitoring report cover?") == ["NIST.AI.800-4"]


def test_titles_give_labels_and_names():
    entries = {d: DocEntry(d, t) for d, t in TITLES.items()}
    assert entries["NIST.AI.800-4"].label == "NIST AI 800-4, Challenges to the Monitoring of Deployed AI Systems"
    assert entries["NIST.SP.800-218A"].label == ("NIST SP 800-218A, Secure Software Development Practices for "
                                                 "Generative AI and Dual-Use Foundation Models")
    assert entries["NIST.AI.CI-Profile-Concept-Note"].label == ("Concept Note: Artificial Intelligence Risk "
                                                                "Management Framework: Trustworthy AI in Critical "
                                                                "Infrastructure Profile")
    assert DocEntry("NIST.AI.999-9", "NIST AI 999-9").label == "NIST AI 999-9"  # a title that is only the number
    # a title yields a name without its parenthesis or leading article; the alias table adds short forms
    assert "Artificial Intelligence Risk Management Framework" in entries["NIST.AI.100-1"].names
    assert "AI RMF" in entries["NIST.AI.100-1"].names
    assert "Plan for Global Engagement on AI Standards" in entries["NIST.AI.100-5"].names
    cat = Catalog(entries.values())
    assert cat.named("Under the Plan for Global Engagement on AI Standards, who leads?") == ["NIST.AI.100-5"]


def test_pages_name_a_document_by_its_title_and_number_never_its_file_stem():
    entries = {d: DocEntry(d, t) for d, t in TITLES.items()}
    assert entries["NIST.AI.100-1"].display == "AI RMF 1.0 (NIST AI 100-1)"  # the title's own short name
    assert entries["NIST.AI.800-4"].display == "Challenges to the Monitoring of Deployed AI Systems (NIST AI 800-4)"
    assert entries["NIST.AI.CI-Profile-Concept-Note"].display == entries["NIST.AI.CI-Profile-Concept-Note"].label
    assert DocEntry("NIST.AI.999-9", "NIST AI 999-9").display == "NIST AI 999-9"
    assert DocEntry("notes", "").display == "notes"  # no title at all: the id is all there is
    for entry in entries.values():
        assert entry.id not in entry.display


def test_an_indexed_document_no_code_knows_is_listed_and_routed(tiny_index):
    assert documents(tiny_index) == [
        DocEntry("NIST.AI.999-9", "NIST AI 999-9 Guidance on Widget Assurance"),
        DocEntry("NIST.AI.CI-Profile-Concept-Note", "Concept Note: Artificial Intelligence Risk Management "
                                                    "Framework: Trustworthy AI in Critical Infrastructure Profile.")]
    cat = Catalog.from_index(tiny_index)
    assert cat.named("What does the Guidance on Widget Assurance say about reviews?") == ["NIST.AI.999-9"]
    assert cat.named("Per AI 999-9, how often are widgets reviewed?") == ["NIST.AI.999-9"]
    assert cat.named("What does the CI Profile cover?") == ["NIST.AI.CI-Profile-Concept-Note"]

"""Caption index: "see Table 1" in a passage points to that table of the same document."""
from nistchat.engine.references import CaptionIndex


def test_caption_index_follows_table_and_figure_references_within_a_document(parent):
    parents = {"t1": parent("t1", "Table 1 Monitoring categories\n| A | B |", "table", doc="D"),
               "t1b": parent("t1b", "Table 1 (continued)\n| A | B |", "table", doc="D"),
               "f2": parent("f2", "Figure 2: Attack taxonomy", "figure", doc="D"),
               "other": parent("other", "Table 1 of another document", "table", doc="E"),
               "prose": parent("prose", "Table 3 is discussed below.", "prose", doc="D")}
    captions = CaptionIndex(parents)
    assert len(captions) == 3  # prose never becomes a target, a continued caption keeps the first
    assert captions.referenced("six categories (see Table 1); Figure 2 and Table 1 again", "D") == ["t1", "f2"]
    assert captions.referenced("see Table 1", "E") == ["other"]
    assert captions.referenced("see Table 3 and Table 9", "D") == []

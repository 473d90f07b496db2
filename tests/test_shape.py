"""Answer shape of a parent: how many items a list or table has, whether a text states a number."""
from nistchat.engine.shape import item_count, states_number


def test_item_count_and_stated_number(parent):
    six = parent("l", "The six categories are:\n- a\n- b\n- c\n- d\n- e\n- f", "list")
    table = parent("t", "Table 1\n| A | B |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |", "table")
    assert item_count(six) == 6 and item_count(table) == 2 and item_count(parent("p", "- not a list")) == 0
    assert states_number(six.text, 6) and not states_number(six.text, 5)
    assert not states_number("MEASURE 2.6 applies", 6)

"""admin/editor.py on its own: the form <-> config mapping, the edit operations at their edges
(out of range, malformed, first/last), and error paths for field marks. The happy-path htmx
round trips are in test_web_admin.py."""
from __future__ import annotations

import json

from werkzeug.datastructures import MultiDict

from nistchat.admin.editor import Category, Draft, error_paths
from nistchat.topics import questions
from nistchat.topics.questions import Topic


def default_config() -> dict:
    return json.loads(questions.DEFAULT_PATH.read_text(encoding="utf-8"))


def test_the_default_config_survives_a_round_trip_through_the_draft():
    assert Draft.from_config(default_config()).to_config() == default_config()


def test_form_fields_become_a_draft_in_numeric_order_with_text_routed_by_mode():
    form = MultiDict({
        "intro": " Welcome ",
        "c10.name": "Tenth", "c10.emoji": "🔟", "c10.q0.label": "Only", "c10.q0.mode": "plain",
        "c2.name": "Second", "c2.intro": "",
        "c2.q11.label": "Later", "c2.q11.mode": "answer", "c2.q11.text": "Canned",
        "c2.q3.label": "Earlier", "c2.q3.mode": "prompt", "c2.q3.text": "Sent",
        "c2.q5.label": "Odd mode", "c2.q5.mode": "javascript", "c2.q5.text": "dropped",
        "csrf_token": "x", "op": "add_cat", "c2.bogus": "ignored", "c2.q1.colour": "ignored",
    })
    draft = Draft.from_form(form)
    assert [c.name for c in draft.categories] == ["Second", "Tenth"]  # 2 before 10, not "10" before "2"
    second = draft.categories[0].questions
    assert [q.label for q in second] == ["Earlier", "Odd mode", "Later"]
    assert second[0] == Topic("Earlier", "prompt", prompt="Sent")
    assert second[1] == Topic("Odd mode", "plain")  # an unknown mode falls back to plain, its text dropped
    assert second[2] == Topic("Later", "answer", answer="Canned")
    assert draft.to_config() == {"intro": "Welcome", "categories": [
        {"name": "Second", "emoji": "", "questions": [{"label": "Earlier", "prompt": "Sent"}, "Odd mode",
                                                      {"label": "Later", "answer": "Canned"}]},
        {"name": "Tenth", "emoji": "🔟", "questions": ["Only"]}]}


def test_to_config_trims_text_and_drops_empty_intros():
    draft = Draft(intro="  ", categories=[Category(" A ", " x ", "  ", [Topic(" q ", "prompt", prompt="  p  ")])])
    assert draft.to_config() == {"categories": [{"name": "A", "emoji": "x",
                                                 "questions": [{"label": "q", "prompt": "p"}]}]}


def names(draft: Draft) -> list[str]:
    return [c.name for c in draft.categories]


def labels(draft: Draft, i: int = 0) -> list[str]:
    return [q.label for q in draft.categories[i].questions]


def small_draft() -> Draft:
    return Draft(categories=[Category("A", questions=[Topic("a1", "plain"), Topic("a2", "plain")]),
                             Category("B", questions=[Topic("b1", "plain")])])


def test_operations_move_add_and_delete():
    draft = small_draft()
    draft.apply("down_q:0:0")
    assert labels(draft) == ["a2", "a1"]
    draft.apply("up_q:0:1")
    assert labels(draft) == ["a1", "a2"]
    draft.apply("down_cat:0")
    assert names(draft) == ["B", "A"]
    draft.apply("del_q:1:0")
    assert labels(draft, 1) == ["a2"]
    draft.apply("add_q:0")
    assert draft.categories[0].questions[-1] == Topic("", "plain")
    draft.apply("add_cat")
    assert names(draft) == ["B", "A", "New category"] and draft.categories[-1].emoji == "📄"
    draft.apply("del_cat:2")
    assert names(draft) == ["B", "A"]


def test_operations_at_the_edges_or_malformed_change_nothing():
    for op in ("up_cat:0", "down_cat:1", "up_q:0:0", "down_q:0:1", "del_cat:2", "del_cat:-1", "del_q:0:5",
               "del_q:3:0", "del_q:0", "add_q:9", "up_cat:x", "del_q:0:a", "del_cat", "rename:0", "", ":"):
        draft = small_draft()
        draft.apply(op)
        assert draft == small_draft(), op


def test_error_paths_mark_the_category_the_question_and_the_field():
    assert error_paths(["categories[1].questions[0].label: is required"]) == {"c1", "c1.q0", "c1.q0.label"}
    assert error_paths(["categories[2].questions[3]: duplicate label 'x'"]) == {"c2", "c2.q3"}
    assert error_paths(["categories[0].name: is required"]) == {"c0", "c0.name"}
    assert error_paths(["top level: unknown keys ['x']", "Not valid JSON: ..."]) == set()

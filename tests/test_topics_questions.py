"""topics/questions.py on its own: the three entry modes, validation messages with their paths,
JSON parse errors, the fallback to the packaged default, lookup, and the guarded atomic save."""
from __future__ import annotations

import json

import pytest

from nistchat.topics import questions
from nistchat.topics.questions import Topic


def good_config() -> dict:
    return {"intro": "Hello", "categories": [
        {"name": "One", "emoji": "1", "intro": "first", "questions": [
            "Plain question?",
            {"label": "Shown label", "prompt": "Prompt sent to the engine"},
            {"label": "Canned", "answer": "Verbatim answer", "prompt": "ignored"},
        ]},
    ]}


def test_entries_resolve_to_topics_in_three_modes_and_answer_wins_over_prompt():
    plain, prompt, answer = (questions.entry_to_topic(e) for e in good_config()["categories"][0]["questions"])
    assert plain == Topic("Plain question?", "plain")
    assert prompt == Topic("Shown label", "prompt", prompt="Prompt sent to the engine")
    assert answer.mode == "answer" and answer.answer == "Verbatim answer"
    assert (plain.text, prompt.text, answer.text) == ("", "Prompt sent to the engine", "Verbatim answer")
    assert questions.topic_to_entry(plain) == "Plain question?"
    assert questions.topic_to_entry(prompt) == {"label": "Shown label", "prompt": "Prompt sent to the engine"}
    assert questions.topic_to_entry(answer) == {"label": "Canned", "answer": "Verbatim answer"}


def test_the_packaged_default_is_valid():
    config, errors = questions.parse(questions.DEFAULT_PATH.read_text(encoding="utf-8"))
    assert errors == [] and config["categories"]
    assert questions.validate(good_config()) == []


@pytest.mark.parametrize("config, message", [
    ([], "top level: must be an object"),
    ({"categories": {}}, "categories: must be a list"),
    ({"categories": [], "colour": "red"}, "top level: unknown keys ['colour']"),
    ({"intro": 3, "categories": []}, "intro: must be text"),
    ({"categories": ["x"]}, "categories[0]: must be an object"),
    ({"categories": [{"name": " ", "questions": []}]}, "categories[0].name: is required"),
    ({"categories": [{"name": "a", "emoji": 1}]}, "categories[0].emoji: must be text"),
    ({"categories": [{"name": "a", "extra": 1}]}, "categories[0]: unknown keys ['extra']"),
    ({"categories": [{"name": "a", "questions": "q"}]}, "categories[0].questions: must be a list"),
    ({"categories": [{"name": "a", "questions": ["  "]}]}, "categories[0].questions[0]: question text is empty"),
    ({"categories": [{"name": "a", "questions": [{"prompt": "p"}]}]}, "categories[0].questions[0].label: is required"),
    ({"categories": [{"name": "a", "questions": [{"label": "l"}]}]}, 'needs a non-empty "prompt" or "answer"'),
    ({"categories": [{"name": "a", "questions": [{"label": "l", "prompt": "p", "answer": 5}]}]},
     "categories[0].questions[0].answer: must be text"),
    ({"categories": [{"name": "a", "questions": [{"label": "l", "prompt": "p", "x": 1}]}]},
     "categories[0].questions[0]: unknown keys ['x']"),
    ({"categories": [{"name": "a", "questions": [7]}]}, "categories[0].questions[0]: must be text or an object"),
])
def test_malformed_configs_are_rejected_with_a_message_naming_the_place(config, message):
    errors = questions.validate(config)
    assert any(message in e for e in errors), errors


def test_duplicate_labels_are_found_across_categories_ignoring_case_and_spaces():
    config = {"categories": [{"name": "a", "questions": ["Same label"]},
                             {"name": "b", "questions": [{"label": " same LABEL ", "prompt": "p"}]}]}
    assert questions.validate(config) == [
        "categories[1].questions[0]: duplicate label ' same LABEL ' (also at categories[0].questions[0])"]


def test_parse_reports_where_the_json_breaks():
    config, errors = questions.parse('{\n  "categories": [,]\n}')
    assert config is None and errors == ["Not valid JSON: Expecting value at line 2, column 18."]
    config, errors = questions.parse('{"categories": [{"name": ""}]}')
    assert config is None and errors == ["categories[0].name: is required"]


def test_a_missing_or_broken_site_file_falls_back_to_the_default(tmp_path):
    default_text = questions.DEFAULT_PATH.read_text(encoding="utf-8")
    path = tmp_path / "questions_config.json"
    assert questions.read_text(path) == default_text
    path.write_text('{"categories": [', encoding="utf-8")
    config, sha = questions.load(path)
    assert config == json.loads(default_text) and sha == questions.sha256(default_text)
    path.write_text(questions.dumps(good_config()), encoding="utf-8")
    config, sha = questions.load(path)
    assert config == good_config() and sha == questions.sha256(path.read_text(encoding="utf-8"))


def test_find_topic_matches_labels_ignoring_case_and_surrounding_space():
    config = good_config()
    assert questions.find_topic(config, "  shown LABEL ").prompt == "Prompt sent to the engine"
    assert questions.find_topic(config, "plain question?").mode == "plain"
    assert questions.find_topic(config, "Prompt sent to the engine") is None  # prompts are not labels


def test_save_writes_atomically_and_records_the_old_then_the_new_text(tmp_path):
    path = tmp_path / "instance" / "questions_config.json"
    base = questions.sha256(questions.read_text(path))
    recorded = []
    new_sha = questions.save(path, good_config(), base, lambda old, new: recorded.append((old, new)))
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == good_config() and new_sha == questions.sha256(text)
    assert recorded == [(questions.DEFAULT_PATH.read_text(encoding="utf-8"), text)]
    assert sorted(p.name for p in path.parent.iterdir()) == ["questions_config.json", "questions_config.json.lock"]


def test_save_on_an_older_version_changes_nothing(tmp_path):
    path = tmp_path / "questions_config.json"
    path.write_text(questions.dumps(good_config()), encoding="utf-8")
    recorded = []
    with pytest.raises(questions.StaleVersion, match="Someone saved the questions"):
        questions.save(path, {"categories": []}, questions.sha256("an older text"), lambda *a: recorded.append(a))
    assert recorded == [] and json.loads(path.read_text(encoding="utf-8")) == good_config()


def test_a_failed_version_record_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "questions_config.json"
    before = questions.dumps(good_config())
    path.write_text(before, encoding="utf-8")

    def refuse(_old, _new):
        raise RuntimeError("database is down")

    with pytest.raises(RuntimeError):
        questions.save(path, {"categories": []}, questions.sha256(before), refuse)
    assert path.read_text(encoding="utf-8") == before

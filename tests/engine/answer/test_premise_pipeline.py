"""A premise the passages contradict, through the real pipeline (real index, embedder and gate):
the reader is told, the trace shows it, and an answer that opens by agreeing is flagged. The
reader is the named test double of test_pipeline.py that records what it was sent, so the
opening is a fixed text (the real 0.5B reader's openings are measured in docs/decisions.md)."""
from __future__ import annotations

import pytest

from nistchat.config import AnswerSettings
from tests.engine.answer.test_pipeline import rt, run, use_reader  # noqa: F401  (rt is a fixture)

QUESTION = "why are AI standards mandatory for US companies under the global engagement plan?"


class RecordingReader:
    """TEST DOUBLE: answers with a fixed text and keeps the messages it was sent."""

    def __init__(self, text):
        self.text, self.name, self.calls = text, "recording (fixed text)", []

    def stream(self, messages, *, max_tokens=512, temperature=0.1, first_token_s=None):
        self.calls.append(messages)
        yield from (self.text[i:i + 6] for i in range(0, len(self.text), 6))


@pytest.fixture
def fixed(rt, monkeypatch):  # noqa: F811
    """`rt` with string checks only (no judge calls) and the default passage budget: `rt`'s short
    one trims the passages to the question's own words, and the sentence that contradicts a
    premise is the one that does not repeat them."""
    monkeypatch.setattr(rt.settings.verify, "mode", "never")
    monkeypatch.setattr(rt.settings.answer, "context_tokens", AnswerSettings().context_tokens)
    return rt


def premise_stage(final: dict) -> dict:
    (stage,) = [s for s in final["trace"]["stages"] if s["name"] == "premise"]
    return stage


def test_an_opening_that_agrees_with_a_contradicted_premise_is_flagged(fixed):
    rt = fixed
    agrees = "AI standards are mandatory for US companies under the plan [1]. The plan lists them."
    reader = RecordingReader(agrees)
    use_reader(rt, reader)
    final = run(rt, QUESTION)[0][-1].to_dict()
    stage = premise_stage(final)
    contradicted = stage["items"][0]["contradicted"]
    assert contradicted and "voluntary" in contradicted["sentence"].lower()
    assert f"passage [{contradicted['passage']}] contradicts" in stage["note"]
    prompt = reader.calls[0][1]["content"]  # the context message: passages, then our note
    assert "Begin your answer by correcting that assumption" in prompt
    assert contradicted["sentence"][:40] in prompt.split("</passages>", 1)[1]
    assert final["flagged"] and not final["refused"]
    marked = [s for s in final["sentences"] if not s["supported"]]
    assert [s["text"] for s in marked] == ["AI standards are mandatory for US companies under the plan [1]."]
    assert "contradicts" in marked[0]["reason"]

    use_reader(rt, RecordingReader("No. Under the plan, standards are adopted on a voluntary basis [1]."))
    final = run(rt, QUESTION)[0][-1].to_dict()
    assert not any("contradicts" in s["reason"] for s in final["sentences"])


def test_an_ordinary_question_gets_no_premise_note(fixed):
    rt = fixed
    reader = RecordingReader("GOVERN cultivates a culture of risk management [1].")
    use_reader(rt, reader)
    final = run(rt, "What does the GOVERN function do in the AI RMF?")[0][-1].to_dict()
    assert premise_stage(final)["items"] == [{"premises": [], "contradicted": None}]
    assert "correcting that assumption" not in reader.calls[0][1]["content"]

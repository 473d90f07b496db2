"""A premise the passages contradict, through the real pipeline (real index, embedder and gate):
the answer opens with the passage's sentence, the trace shows it, and a reader that opens by
agreeing is flagged. The reader is test_pipeline.py's named test double with a fixed text, so its
opening is known (the real 0.5B reader's openings are measured in docs/decisions.md)."""
from __future__ import annotations

import pytest

from nistchat.config import AnswerSettings
from nistchat.engine import DECLINED_RETRY, Retry
from nistchat.engine.verification.premise import AGREES_WITH_PREMISE, quote
from tests.engine.answer.test_pipeline import ScriptedReader, rt, run, use_reader  # noqa: F401  (rt is a fixture)

QUESTION = "why are AI standards mandatory for US companies under the global engagement plan?"


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


def test_an_opening_that_agrees_with_a_contradicted_premise_leaves_the_lead_alone(fixed):
    rt = fixed
    agrees = "AI standards are mandatory for US companies under the plan [1]. The plan lists them."
    use_reader(rt, ScriptedReader(agrees, "agrees with the premise"))
    final = run(rt, QUESTION)[0][-1].to_dict()
    stage = premise_stage(final)
    contradicted = stage["items"][0]["contradicted"]
    assert contradicted and "voluntary" in contradicted["sentence"].lower()
    assert f"passage [{contradicted['passage']}] contradicts" in stage["note"]
    first = final["attempts"][0]
    assert first["answer"].startswith(f"Not quite. \"{contradicted['sentence'][:40]}")
    assert first["answer"].endswith(agrees)  # the reader's draft followed the lead whole
    marked = [s for s in first["sentences"] if not s["supported"]]
    assert [s["text"] for s in marked] == ["AI standards are mandatory for US companies under the plan [1]."]
    assert marked[0]["reason"] == AGREES_WITH_PREMISE
    # what follows an agreeing opening builds on the premise: the answer is the lead alone, no reader call
    assert final["retried"] and final["chosen_attempt"] == 2 and not final["refused"]
    assert final["answer"] == f"Not quite. \"{quote(contradicted['sentence'])}\" [{contradicted['passage']}]"
    assert not final["flagged"]

    use_reader(rt, ScriptedReader("No. Under the plan, standards are adopted on a voluntary basis [1].", "corrects it"))
    final = run(rt, QUESTION)[0][-1].to_dict()
    assert not any("contradicts" in s["reason"] for s in final["sentences"])


def test_a_draft_that_finds_no_answer_after_a_contradicted_premise_leaves_the_lead_alone(fixed):
    """The passages contradict what the question takes for granted: the correction is an answer of
    its own, where a refusal would say the documents hold nothing on it."""
    rt = fixed
    use_reader(rt, ScriptedReader("I don't know.", "finds no answer"))
    events = run(rt, QUESTION)[0]
    final = events[-1].to_dict()
    contradicted = premise_stage(final)["items"][0]["contradicted"]
    assert contradicted and not final["refused"] and final["retried"] and final["chosen_attempt"] == 2
    assert final["answer"] == f"Not quite. \"{quote(contradicted['sentence'])}\" [{contradicted['passage']}]"
    assert [e.reason for e in events if isinstance(e, Retry)] == [DECLINED_RETRY]

    final = run(rt, "What does the GOVERN function do in the AI RMF?")[0][-1].to_dict()  # nothing to correct
    assert final["refused"] and final["refusal_reason"] == "reader_declined"


def test_an_ordinary_question_gets_no_lead(fixed):
    rt = fixed
    use_reader(rt, ScriptedReader("GOVERN cultivates a culture of risk management [1].", "an ordinary answer"))
    final = run(rt, "What does the GOVERN function do in the AI RMF?")[0][-1].to_dict()
    assert premise_stage(final)["items"] == [{"premises": [], "contradicted": None}]
    assert final["answer"] == "GOVERN cultivates a culture of risk management [1]."


def test_a_follow_ups_premise_about_it_is_checked_as_said_of_the_document_it_leans_on(fixed):
    rt = fixed
    use_reader(rt, ScriptedReader("Yes, it is binding on every vendor [1].", "agrees with the premise"))
    history = [{"role": "user", "content": "what is the plan for global engagement on ai standards about"},
               {"role": "assistant", "content": "How the US engages in international AI standards work."}]
    final = list(rt.answer("so why is it binding on every vendor?", history))[-1].to_dict()
    contradicted = premise_stage(final)["items"][0]["contradicted"]
    assert contradicted["claim"].endswith("(NIST AI 100-5) binding on every vendor"), contradicted
    assert "voluntary" in contradicted["sentence"].lower()
    assert final["answer"].startswith("Not quite.") and "binding" not in final["answer"]

"""The /audit page and POST /api/audit over the tiny real index: per-sentence results, the audit
stored as a message marked "audit", in History and in the log exports."""
from __future__ import annotations

import json

import pytest

from nistchat.models import Message

from .web_support import build_app, post, stored

QUESTION = "How often is each widget reviewed?"
ANSWER = "Each widget is reviewed before release and again every quarter. Widgets are recalled after 45 days."


def test_audit_page_checks_each_sentence_and_stores_the_audit(tmp_path, tiny_runtime):
    client = build_app(tmp_path, tiny_runtime).test_client()
    html = client.get("/audit").get_data(as_text=True)
    assert 'href="/audit"' in html and 'name="answer"' in html and 'value="NIST.AI.999-9"' in html
    response = post(client, "/audit", {"question": QUESTION, "answer": ANSWER}, token_from="/audit")
    html = response.get_data(as_text=True)
    assert response.status_code == 200, html[:500]
    assert "Trust score" in html and "supported" in html and "not found" in html
    assert "<mark>Each widget is reviewed before release and again every quarter.</mark>" in html
    assert "NIST.AI.999-9" in html and "not stated in the best passage: 45" in html
    message = stored(client, Message, 1)
    assert message.kind == "audit" and message.answer == ANSWER and message.audit["label"]
    assert [v["verdict"] for v in message.verdicts][0] == "supported"
    assert "Audit: " + QUESTION in client.get("/history").get_data(as_text=True)
    assert "trust score" in client.get(f"/c/{message.conversation_id}").get_data(as_text=True)
    assert client.get(f"/audit/{message.id}").status_code == 200
    record = json.loads(client.get("/logs.jsonl").get_data(as_text=True).splitlines()[0])
    assert record["kind"] == "audit" and record["audit"]["trust_score"] == message.audit["trust_score"]
    empty = post(client, "/audit", {"question": QUESTION, "answer": " "}, token_from="/audit")
    assert empty.status_code == 422 and "Paste the answer" in empty.get_data(as_text=True)


def test_api_audit_returns_the_json_contract_and_validates(tmp_path, tiny_runtime):
    client = build_app(tmp_path, tiny_runtime).test_client()
    data = client.post("/api/audit", json={"question": QUESTION, "answer": ANSWER, "judge": False,
                                           "docs": ["NIST.AI.999-9"]}).get_json()
    assert {"trust_score", "label", "sentences", "message_id"} <= set(data)
    assert data["sentences"][0]["verdict"] == "supported" and data["sentences"][0]["passage"]["doc"] == "NIST.AI.999-9"
    assert data["docs"] == ["NIST.AI.999-9"] and 0 <= data["trust_score"] <= 1
    bad = client.post("/api/audit", json={"answer": ANSWER, "docs": ["NIST.AI.404"]})
    assert bad.status_code == 400 and "NIST.AI.999-9" in bad.get_json()["message"]
    assert client.post("/api/audit", data={"answer": "x"}).status_code == 415


@pytest.mark.both_engines
def test_an_audit_is_stored_without_control_characters(tmp_path, tiny_runtime, database_url):
    """As questions are: a NUL or ESC pasted with an answer is removed (PostgreSQL refuses a NUL)."""
    client = build_app(tmp_path, tiny_runtime, database_url=database_url).test_client()
    data = client.post("/api/audit", json={"question": "\x00" + QUESTION, "answer": ANSWER + "\x1b[2J\x00",
                                           "judge": False}).get_json()
    message = stored(client, Message, data["message_id"])
    assert message.question == QUESTION and message.answer == ANSWER + "[2J"

"""Bad input across the routes (nistchat/web.py's guards and the routes using them): a 4xx with a
clear message, never a 500; control characters stripped before anything is stored; the login
form redirects only to a path on this site."""
from __future__ import annotations

import json
import re

import pytest

from nistchat.models import Conversation, Message

from .web_support import ADMIN_PASSWORD, DIRECT_LABEL, HX, login, post, stored

pytestmark = pytest.mark.both_engines  # every test using the database runs on SQLite and PostgreSQL

HUGE = "99999999999999999999"
FAR_DATES = ["from=9999-12-31", "to=9999-12-31", "from=0001-01-01"]
BAD_GETS = ([f"/history?page={HUGE}", f"/history?q=risk&page={HUGE}", f"/api/history?page={HUGE}",
             f"/api/history?q=risk&page={HUGE}", "/ask/stream/12345678901234567890123"]
            + [f"{path}?{arg}" for path in ("/logs.csv", "/logs.jsonl", "/api/logs") for arg in FAR_DATES])


@pytest.mark.parametrize("url", BAD_GETS)
def test_bad_query_values_are_a_4xx_with_a_message(client, url):
    response = client.get(url)
    body = response.get_data(as_text=True)  # read the whole body: log errors used to come mid-stream
    assert 400 <= response.status_code < 500, (url, response.status_code, body[:300])
    if url.startswith("/api/"):
        assert response.get_json()["type"] == "error" and response.get_json()["message"]
    elif "stream" not in url:
        assert "between" in body


def test_far_dates_are_refused_before_streaming_even_for_admins(client):
    login(client)
    for path in ("/logs.csv", "/logs.jsonl", "/api/logs"):
        response = client.get(f"{path}?from=9999-12-30&to=9999-12-31")
        assert response.status_code == 400, path
        assert "9999-12-31" in response.get_data(as_text=True)


def test_deeply_nested_json_is_a_400(client):
    body = "[" * 100_000 + "]" * 100_000
    response = client.post("/api/ask", data=body, content_type="application/json")
    assert response.status_code == 400 and "nested" in response.get_json()["message"]
    nested = '{"question": ' + "[" * 50_000 + "]" * 50_000 + "}"
    assert client.post("/api/ask", data=nested, content_type="application/json").status_code == 400


def test_huge_ids_in_admin_query_arguments_are_not_a_500(client):
    login(client)
    assert client.get(f"/evals/compare?a={HUGE}&b={HUGE}").status_code == 302  # like a missing a/b
    assert client.get(f"/evals/{HUGE}").status_code == 404
    response = post(client, f"/admin/questions/restore/{HUGE}", token_from="/admin")
    assert response.status_code == 404


@pytest.mark.parametrize("target", ["/admin\nX-Evil: 1", "/admin\r\nSet-Cookie: x=1", "/\t/evil.example/",
                                    "/\n/evil.example/", "/\\evil.example/", "//evil.example/",
                                    "https://evil.example/", "/ /evil.example", "javascript:alert(1)"])
def test_login_redirects_only_to_a_path_on_this_site(client, target):
    page = client.get("/admin", query_string={"next": target})
    assert page.status_code == 200
    response = post(client, "/admin/login", {"password": ADMIN_PASSWORD, "next": target}, token_from="/admin")
    assert response.status_code == 302 and response.headers["Location"] == "/admin"


def test_login_keeps_a_plain_local_next(client):
    response = post(client, "/admin/login", {"password": ADMIN_PASSWORD, "next": "/evals?set=dev"},
                    token_from="/admin")
    assert response.headers["Location"] == "/evals?set=dev"


def test_control_characters_are_stripped_from_questions(client):
    response = post(client, "/ask", {"question": "what\x02 is\x03 a\x1b[31m risk\x00 profile?\r\nline\ttwo"},
                    htmx=True)
    assert response.status_code == 200
    with client.application.app_context():
        message = Message.query.order_by(Message.id.desc()).first()
        question, conversation_id = message.question, message.conversation_id
    assert question == "what is a[31m risk profile?\nline\ttwo"
    assert "\x02" not in stored(client, Conversation, conversation_id).title
    api = client.post("/api/ask", json={"question": "\x00\x07 \x1b"})
    assert api.status_code == 400  # nothing left but a space: "type a question first"


def test_control_characters_are_stripped_from_history_search(client):
    post(client, "/ask", {"question": DIRECT_LABEL, "topic": "1"}, htmx=True)
    html = client.get("/history", query_string={"q": "documents\x02\x00"}, headers=HX).get_data(as_text=True)
    assert "\x02" not in html and "\x00" not in html
    assert client.get("/api/history", query_string={"q": "\x00\x1b"}).status_code == 200


def test_control_characters_are_stripped_from_topic_fields(client):
    login(client)
    html = client.get("/admin/questions").get_data(as_text=True)
    base_sha = re.search(r'name="base_sha" value="([0-9a-f]+)"', html).group(1)
    config = {"categories": [{"name": "Risk\u0002s", "questions": [
        "What\u001b is\u0000 a profile?", {"label": "Hi\u0003", "answer": "Hello\u0007\nthere"}]}]}
    response = post(client, "/admin/questions", {"raw_json": json.dumps(config), "base_sha": base_sha},
                    htmx=True, token_from="/admin/questions")
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    saved = json.loads(client.application.config["SETTINGS"].questions_path.read_text())
    category = saved["categories"][0]
    assert category["name"] == "Risks"
    assert category["questions"] == ["What is a profile?", {"label": "Hi", "answer": "Hello\nthere"}]
    only_controls = {"categories": [{"name": "R", "questions": ["\u0002\u0003"]}]}
    response = post(client, "/admin/questions", {"raw_json": json.dumps(only_controls),
                                                 "base_sha": _sha(client)},
                    htmx=True, token_from="/admin/questions")
    assert response.status_code == 422  # empty once cleaned: the validator sees the cleaned text


def _sha(client) -> str:
    html = client.get("/admin/questions").get_data(as_text=True)
    return re.search(r'name="base_sha" value="([0-9a-f]+)"', html).group(1)


def test_the_audit_api_answers_bad_json_with_a_400_too(client):
    body = '{"question": "q", "answer": ' + "[" * 50_000 + "]" * 50_000 + "}"
    response = client.post("/api/audit", data=body, content_type="application/json")
    assert response.status_code == 400 and "nested" in response.get_json()["message"]
    for bad in ([], {"question": 1, "answer": "a"}, {"question": "q", "answer": ["a"]}):
        response = client.post("/api/audit", json=bad)
        assert response.status_code == 400 and '"answer": "..."' in response.get_json()["message"]
    assert client.post("/api/audit", data="question=q", content_type="text/plain").status_code == 415


def test_a_null_question_is_an_empty_question_not_a_500(client):
    response = client.post("/api/ask", json={"question": None})
    assert response.status_code == 400 and response.get_json()["kind"] == "bad_input"


def test_conversation_ids_that_cannot_exist_are_a_404_without_a_query(client):
    """A NUL in an id reached PostgreSQL, which refuses it in text (a 500 there, not on SQLite)."""
    for conv_id in ("%00x", "x" * 40, "A" * 32, "0" * 31 + "%00"):
        assert client.get(f"/c/{conv_id}").status_code == 404
    response = client.post("/api/ask", json={"question": DIRECT_LABEL, "topic": True, "conversation_id": "\x00abc"})
    assert response.status_code == 404

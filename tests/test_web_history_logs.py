"""History (own vs admin, paging, FTS5 search with highlights, htmx partial) and log downloads
(CSV/JSONL, ranges, scope, the daily log file), on SQLite and on PostgreSQL."""
from __future__ import annotations

import pytest

import csv
import io
import json
from datetime import date

from .web_support import DIRECT_LABEL, HX, ask_and_stream, login

pytestmark = pytest.mark.both_engines  # every test using the database runs on SQLite and PostgreSQL

MARKS_LABEL = "How do I read the support marks?"


def test_history_lists_this_browsers_conversations_newest_first(client):
    ask_and_stream(client, DIRECT_LABEL, topic=True)
    client.post("/new", data={"csrf_token": _token(client)})
    ask_and_stream(client, MARKS_LABEL, topic=True)
    html = client.get("/history").get_data(as_text=True)
    assert html.index(MARKS_LABEL) < html.index(DIRECT_LABEL)


def test_history_is_private_per_browser_and_admin_sees_all(app):
    alice, bob = app.test_client(), app.test_client()
    ask_and_stream(alice, DIRECT_LABEL, topic=True)
    assert DIRECT_LABEL not in bob.get("/history").get_data(as_text=True)
    assert "No conversations yet" in bob.get("/history").get_data(as_text=True)
    login(bob)
    assert DIRECT_LABEL in bob.get("/history").get_data(as_text=True)


def test_search_highlights_matches_in_questions_and_answers(client):
    ask_and_stream(client, DIRECT_LABEL, topic=True)
    html = client.get("/history?q=documents").get_data(as_text=True)
    assert "<mark>documents</mark>" in html
    answer_hit = client.get("/history?q=Adversarial").get_data(as_text=True)
    assert "<mark>Adversarial</mark>" in answer_hit  # the answer text is indexed too
    assert "1 matching message" in answer_hit
    assert "Nothing found" in client.get("/history?q=zebra").get_data(as_text=True)


def test_search_as_you_type_returns_the_results_partial(client):
    ask_and_stream(client, DIRECT_LABEL, topic=True)
    response = client.get("/history?q=docu", headers={**HX, "HX-Target": "results"})
    body = response.get_data(as_text=True)
    assert "<html" not in body and "<mark>documents</mark>" in body  # prefix match while typing
    full = client.get("/history?q=docu")
    assert "<html" in full.get_data(as_text=True)  # the same URL, pushed to the address bar: a full page
    for response in (response, full):
        assert {"HX-Request", "HX-Target"} <= set(response.vary), response.vary  # caches keep them apart


def test_search_is_safe_with_fts_syntax_and_markup(client):
    ask_and_stream(client, DIRECT_LABEL, topic=True)
    for q in ['"unbalanced', "NEAR(a b", "a OR", "*", "<script>x</script>", "-", "a:b"]:
        response = client.get("/history", query_string={"q": q})
        assert response.status_code == 200, q
        assert "<script>x</script>" not in response.get_data(as_text=True)


def test_history_pages(tmp_path, light_runtime, database_url):
    from .web_support import build_app
    app = build_app(tmp_path, light_runtime, database_url=database_url, settings={"history_page_size": 2, "ask_rate_limit": "100 per minute"})
    client = app.test_client()
    for _ in range(3):
        ask_and_stream(client, DIRECT_LABEL, topic=True)
        client.post("/new", data={"csrf_token": _token(client)})
    first = client.get("/history").get_data(as_text=True)
    assert "Page 1 of 2" in first and first.count("/c/") == 2
    second = client.get("/history?page=2").get_data(as_text=True)
    assert second.count("/c/") == 1
    assert client.get("/history?page=abc").status_code == 200


def test_logs_csv_and_jsonl_for_today(client):
    ask_and_stream(client, DIRECT_LABEL, topic=True)
    response = client.get("/logs.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert len(rows) == 1 and rows[0]["question"] == DIRECT_LABEL and rows[0]["status"] == "done"
    lines = client.get("/logs.jsonl").get_data(as_text=True).splitlines()
    record = json.loads(lines[0])
    assert record["label"] == DIRECT_LABEL and "Adversarial" in record["answer"]


def test_logs_date_range_and_bad_dates(client):
    ask_and_stream(client, DIRECT_LABEL, topic=True)
    today = date.today().isoformat()
    assert client.get(f"/logs.jsonl?from={today}&to={today}").get_data(as_text=True).strip()
    assert client.get("/logs.jsonl?from=2001-01-01&to=2001-01-31").get_data(as_text=True) == ""
    assert client.get("/logs.csv?from=yesterday").status_code == 400
    assert client.get("/logs.csv?from=2025-02-01&to=2025-01-01").status_code == 400


def test_logs_are_own_for_users_and_all_for_admins(app):
    alice, bob = app.test_client(), app.test_client()
    ask_and_stream(alice, DIRECT_LABEL, topic=True)
    assert bob.get("/logs.jsonl").get_data(as_text=True) == ""
    assert bob.get("/logs.jsonl?scope=all").status_code == 403
    login(bob)
    assert DIRECT_LABEL in bob.get("/logs.jsonl").get_data(as_text=True)


def test_csv_defuses_spreadsheet_formulas(client):
    ask_and_stream(client, "=HYPERLINK(\"http://x\")")
    text = client.get("/logs.csv").get_data(as_text=True)
    assert "'=HYPERLINK" in text
    from nistchat.logs.export import _defuse
    assert _defuse({"a": "\t=1", "b": "\r=1", "c": "ok", "d": -1.5}) == {"a": "'\t=1", "b": "'\r=1", "c": "ok", "d": -1.5}


def test_daily_log_file_is_written(client):
    ask_and_stream(client, DIRECT_LABEL, topic=True)
    instance = client.application.config["SETTINGS"].instance_dir
    path = instance / "logs" / f"nistchat_{date.today():%Y%m%d}.log"
    record = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    assert record["question"] == DIRECT_LABEL and record["status"] == "done"


def _token(client) -> str:
    from .web_support import csrf_token
    return csrf_token(client)


def test_log_days_are_the_servers_local_days(client, monkeypatch):
    """Messages are stored in UTC; `?from=` names a local day (as the daily log file does). At
    UTC+12, 18:00 UTC on the 9th is 06:00 on the 10th, so it belongs to the 10th's log."""
    import time
    from datetime import datetime

    from nistchat.extensions import db
    from nistchat.models import Conversation, Message

    client.get("/")
    with client.session_transaction() as session:
        owner = session["owner"]
    with client.application.app_context():
        conv = Conversation(owner=owner, title="t")
        db.session.add(conv)
        db.session.flush()
        db.session.add(Message(conversation_id=conv.id, owner=owner, question="=1+1", status="done", answer="a",
                               created_at=datetime(2025, 3, 9, 18, 0)))
        db.session.commit()
    monkeypatch.setenv("TZ", "Etc/GMT-12")  # POSIX sign: this is UTC+12, no daylight saving
    time.tzset()
    try:
        day = client.get("/logs.jsonl?from=2025-03-10")
        rows = [json.loads(line) for line in day.get_data(as_text=True).splitlines()]
        assert [r["question"] for r in rows] == ["=1+1"] and rows[0]["time"] == "2025-03-09T18:00:00+00:00"
        assert client.get("/logs.jsonl?from=2025-03-09").get_data(as_text=True) == ""
        csv_day = client.get("/logs.csv?from=2025-03-10")
        assert 'filename="nistchat_20250310.csv"' in csv_day.headers["Content-Disposition"]
        assert "'=1+1" in csv_day.get_data(as_text=True)
        ranged = client.get("/logs.csv?from=2025-03-01&to=2025-03-10").headers["Content-Disposition"]
        assert 'filename="nistchat_20250301-20250310.csv"' in ranged
    finally:
        monkeypatch.undo()
        time.tzset()

"""Status page, JSON API, the CLI's db/serve wiring, and one real answer through /api/ask."""
from __future__ import annotations

from nistchat.models import Message

from .conftest import SHORT_ANSWERS
from .web_support import DIRECT_LABEL, PROMPT_LABEL, ask_and_stream, build_app, login, ndjson, stored


def test_status_shows_anonymous_users_only_ready_or_degraded(client, tmp_path):
    html = client.get("/status").get_data(as_text=True)
    assert "Degraded" in html and 'data-state="degraded"' in html  # no index in this test app
    for secret in (str(tmp_path), "instance", "nistchat ingest", "The index is not available", "embedded"):
        assert secret not in html, secret
    assert client.get("/status?format=json").get_json() == {"status": "degraded"}
    assert client.get("/status", headers={"Accept": "application/json"}).get_json() == {"status": "degraded"}


def test_status_page_shows_admins_backends_index_db_p80_and_errors(client, tmp_path):
    login(client)
    html = client.get("/status").get_data(as_text=True)
    for text in ("reader", "embedded", "NISTCHAT_BACKEND=embedded", "The index is not available", "nistchat ingest",
                 "LOW", "HIGH", "default (not enough answers yet)", "Errors in the last 24 hours"):
        assert text in html, text
    data = client.get("/status?format=json").get_json()
    assert data["status"] == "degraded" and str(tmp_path) in data["database"]["path"]
    assert {r["role"] for r in data["roles"]} == {"embedder", "reranker", "reader", "verifier"}
    assert data["index"]["ready"] is False and data["database"]["bytes"] > 0
    assert data["p80"]["LOW"]["samples"] == 0
    assert "0 of 1 reader slot in use" in html and data["queue"]["slots"] == 1


def test_status_counts_recent_errors(client):
    ask_and_stream(client, "What is the AI RMF?")  # no index here: a clear error, stored
    login(client)
    assert client.get("/status?format=json").get_json()["errors_24h"] == 1


def test_p80_uses_past_totals_per_risk_class(app):
    from nistchat.chat.progress import estimate_s, p80
    from nistchat.extensions import db
    from nistchat.models import Conversation

    assert p80([5, 1, 4, 2, 3]) == 5 and p80(list(range(1, 11))) == 9
    with app.app_context():
        conv = Conversation(owner="o", title="t")
        db.session.add(conv)
        db.session.flush()
        for ms in (1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000):
            db.session.add(Message(conversation_id=conv.id, owner="o", question="q", status="done", risk="HIGH",
                                   total_ms=ms, answer="a"))
        db.session.commit()
        assert estimate_s("HIGH") == (9.0, 10)
        assert estimate_s("LOW") == (app.config["SETTINGS"].web.p80_default_low_s, 0)  # default until enough samples


def test_api_ask_requires_json_and_a_question(client):
    assert client.post("/api/ask", data={"question": "x"}).status_code == 415
    assert client.post("/api/ask", json={"question": ""}).status_code == 400
    assert client.post("/api/ask", json={"question": "x" * 100_000}).status_code == 400
    assert client.post("/api/ask", json=["not", "an", "object"]).status_code == 400
    unknown = client.post("/api/ask", json={"question": "q", "conversation_id": "nope"})
    assert unknown.status_code == 404 and unknown.get_json()["kind"] == "not_found"
    assert client.post("/api/ask", json={"question": "q", "conversation_id": ["x"]}).status_code == 400


def test_api_errors_are_json_for_scripts(tmp_path, light_runtime):
    app = build_app(tmp_path, light_runtime, settings={"ask_rate_limit": "1 per minute"})
    client = app.test_client()
    missing = client.get("/api/no-such-endpoint")
    assert missing.status_code == 404 and missing.get_json()["type"] == "error"
    assert client.get("/api/ask").get_json()["kind"] == "bad_method"
    client.post("/api/ask", json={"question": ""})
    limited = client.post("/api/ask", json={"question": ""})
    assert limited.status_code == 429 and limited.get_json()["kind"] == "rate_limited"
    page = client.get("/ask")  # a page route keeps the HTML error page, in the site's layout
    assert page.status_code == 405 and "NISTChat" in page.get_data(as_text=True) and page.mimetype == "text/html"


def test_api_ask_streams_ndjson_events_for_a_direct_topic(client):
    response = client.post("/api/ask", json={"question": DIRECT_LABEL, "topic": True})
    assert response.mimetype == "application/x-ndjson"
    events = ndjson(response.get_data(as_text=True))
    types = [e["type"] for e in events]
    assert types[0] == "accepted" and types[-1] == "stored" and "final" in types
    final = next(e for e in events if e["type"] == "final")
    assert final["direct"] is True and "NIST AI 100-5" in final["answer"]
    conv = events[0]["conversation_id"]
    again = ndjson(client.post("/api/ask", json={"question": DIRECT_LABEL, "topic": True,
                                                 "conversation_id": conv}).get_data(as_text=True))
    assert again[0]["conversation_id"] == conv


def test_api_history_and_logs(client):
    ask_and_stream(client, DIRECT_LABEL, topic=True)
    listing = client.get("/api/history").get_json()
    assert listing["total"] == 1 and listing["items"][0]["title"] == DIRECT_LABEL
    found = client.get("/api/history?q=documents").get_json()
    assert found["total"] == 1 and found["items"][0]["question"] == DIRECT_LABEL
    logs = ndjson(client.get("/api/logs").get_data(as_text=True))
    assert logs[0]["label"] == DIRECT_LABEL
    assert client.get("/api/logs?from=nope").status_code == 400
    assert client.get("/api/logs?scope=all").status_code == 403
    login(client)
    assert client.get("/api/logs?scope=all").status_code == 200


def test_evals_page_for_admins(client):
    from nistchat.extensions import db
    from nistchat.models import EvalItem, EvalRun

    with client.application.app_context():
        run = EvalRun(kind="retrieval", note="nightly", sets="dev",
                      metrics={"sets": {"dev": {"n": 1, "passed": 1, "scores": {"hit": 0.9}, "judged": {}}}})
        run.items.append(EvalItem(question="What is GOVERN?", passed=True, ms=12.0))
        db.session.add(run)
        db.session.commit()
        run_id = run.id
    assert client.get("/evals").status_code == 302  # not logged in: to the login page
    login(client)
    assert "hit=0.900" in client.get("/evals").get_data(as_text=True)
    assert "What is GOVERN?" in client.get(f"/evals/{run_id}").get_data(as_text=True)
    assert client.get("/evals/999").status_code == 404


def test_db_upgrade_command(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from nistchat.cli import main

    monkeypatch.setenv("NISTCHAT_INSTANCE_DIR", str(tmp_path / "inst"))
    result = CliRunner().invoke(main, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "inst" / "nistchat.sqlite3").exists()
    import sqlite3

    from alembic.script import ScriptDirectory

    from nistchat.app import PACKAGE_DIR
    head = ScriptDirectory(str(PACKAGE_DIR / "migrations")).get_current_head()
    con = sqlite3.connect(tmp_path / "inst" / "nistchat.sqlite3")
    assert head >= "0011" and con.execute("select version_num from alembic_version").fetchone()[0] == head
    assert con.execute("pragma journal_mode").fetchone()[0] == "wal"


def test_real_answer_through_the_api_with_a_prompt_topic(tmp_path, runtime):
    """One real answer (0.5B reader): the engine gets the topic's prompt, the stored message keeps
    the label, sources come before tokens, and the final answer is stored with its timings."""
    app = build_app(tmp_path, runtime.derived(SHORT_ANSWERS))
    client = app.test_client()
    events = ndjson(client.post("/api/ask", json={"question": PROMPT_LABEL, "topic": True}).get_data(as_text=True))
    types = [e["type"] for e in events if e["type"] != "heartbeat"]
    assert types.index("sources") < types.index("prefill") < types.index("token") < types.index("final"), types
    prefill = next(e for e in events if e["type"] == "prefill")  # the page says the passages are being read
    assert prefill["prompt_tokens"] > 100 and prefill["limit_s"] >= runtime.settings.backends.first_token_floor_s
    sources = next(e for e in events if e["type"] == "sources")["passages"]
    assert sources and all(p["text"] for p in sources)
    message = stored(app, Message, events[0]["message_id"])
    assert message.status == "done" and message.answer
    assert message.label == PROMPT_LABEL and message.prompt.startswith("How does NIST AI 600-1 define confabulation")
    assert message.sources and all(s["text"] for s in message.sources)  # passage text kept for hover/expand
    assert message.total_ms > 0 and message.risk in ("LOW", "HIGH")


def test_unconfigured_secret_key_is_replaced_by_a_kept_random_one(tmp_path):
    """The packaged default key is public: with it anyone could sign an admin session cookie."""
    from flask.sessions import SecureCookieSessionInterface

    from nistchat.app import create_app
    from nistchat.config import WebSettings

    from .conftest import make_settings
    settings = make_settings(tmp_path, secret_key=WebSettings().secret_key)  # the default: none configured
    first = create_app({"SETTINGS": settings})
    assert len(first.secret_key) >= 32
    key_file = settings.instance_dir / "secret_key"
    assert key_file.stat().st_mode & 0o077 == 0  # readable by the owner only
    assert create_app({"SETTINGS": settings}).secret_key == first.secret_key  # sessions survive a restart
    for public in ("", "dev-only-change-me"):  # the empty default and the old packaged key
        forged = SecureCookieSessionInterface().get_signing_serializer(
            type("A", (), {"secret_key": public or "x", "config": first.config})()).dumps({"admin": True})
        client = first.test_client()
        client.set_cookie("session", forged)
        assert client.get("/admin/questions").status_code == 302  # the forged admin session is not accepted
    configured = make_settings(tmp_path, secret_key="site-key")
    assert create_app({"SETTINGS": configured}).secret_key == "site-key"


def test_wsgi_entry_point_serves_a_fresh_instance(tmp_path, monkeypatch):
    import runpy

    from nistchat.config import PROJECT_ROOT

    monkeypatch.setenv("NISTCHAT_INSTANCE_DIR", str(tmp_path / "inst"))
    app = runpy.run_path(str(PROJECT_ROOT / "wsgi.py"))["app"]
    assert app.test_client().get("/history").status_code == 200  # tables exist: no setup step needed


def test_health_is_ready_only_when_index_models_and_self_test_are_fine():
    from nistchat.status.routes import health

    good = {"index": {"ready": True}, "roles_error": "", "self_test": {"state": "passed"},
            "roles": [{"role": "reader", "error": ""}, {"role": "reranker", "error": "absent"}]}
    assert health(good) == "ready"  # an absent reranker is a fallback, not a fault
    assert health({**good, "index": {"ready": False}}) == "degraded"
    assert health({**good, "self_test": {"state": "failed"}}) == "degraded"
    assert health({**good, "roles": [{"role": "reader", "error": "no file"}]}) == "degraded"

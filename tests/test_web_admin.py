"""Admin login and the questions_config editor: htmx operations, validation, atomic versioned saves,
stale-version refusal, concurrent saves, restore, and changes visible without a restart."""
from __future__ import annotations

import json
import re
import threading

import pytest

from nistchat.models import ConfigVersion

from .web_support import ADMIN_PASSWORD, HX, count, csrf_token, login, post

pytestmark = pytest.mark.both_engines  # every test using the database runs on SQLite and PostgreSQL


def editor_state(client) -> tuple[str, str]:
    html = client.get("/admin/questions").get_data(as_text=True)
    return re.search(r'name="base_sha" value="([0-9a-f]+)"', html).group(1), html


def form_fields(html: str) -> dict:
    """The structured editor's fields as a browser would post them."""
    form = html[html.index('id="questions-form"'):html.index("</form>", html.index('id="questions-form"'))]
    fields = {}
    for name, value in re.findall(r'<input name="([^"]+)" value="([^"]*)"', form):
        fields[name] = value
    for name, value in re.findall(r'<textarea name="([^"]+)"[^>]*>([^<]*)</textarea>', form):
        fields[name] = value
    for name, body in re.findall(r'<select name="([^"]+)"[^>]*>(.*?)</select>', form, flags=re.S):
        fields[name] = re.search(r'<option value="(\w+)" selected', body).group(1)
    fields["base_sha"] = re.search(r'name="base_sha" value="([0-9a-f]+)"', form).group(1)
    import html as htmllib
    return {k: htmllib.unescape(v) for k, v in fields.items()}


def test_anonymous_admin_requests_are_refused(client):
    page = client.get("/admin/questions")
    assert page.status_code == 302 and "/admin" in page.headers["Location"]
    token = csrf_token(client)
    assert client.post("/admin/questions", data={"csrf_token": token, "raw_json": "{}"}).status_code == 403
    assert client.post("/admin/questions/edit", data={"csrf_token": token}, headers=HX).status_code == 403
    assert client.get("/evals").status_code == 302
    assert client.get("/admin").status_code == 200  # the login form


def test_wrong_password_is_refused(client):
    response = post(client, "/admin/login", {"password": "nope"}, token_from="/admin")
    assert response.status_code == 401 and "Wrong password" in response.get_data(as_text=True)
    assert client.get("/admin/questions").status_code == 302


def test_login_then_logout(client):
    login(client)
    assert client.get("/admin/questions").status_code == 200
    post(client, "/admin/logout", token_from="/admin")
    assert client.get("/admin/questions").status_code == 302


def test_login_form_refuses_open_redirects(client):
    response = post(client, "/admin/login", {"password": ADMIN_PASSWORD, "next": "//evil.example/"},
                    token_from="/admin")
    assert response.headers["Location"] == "/admin"


def test_edit_operations_return_the_editor_partial(client):
    login(client)
    _, html = editor_state(client)
    fields = form_fields(html)
    token = csrf_token(client, "/admin/questions")
    n_cats = len([k for k in fields if re.fullmatch(r"c\d+\.name", k)])

    def op(fields, name):
        r = client.post("/admin/questions/edit", data={**fields, "op": name, "csrf_token": token}, headers=HX)
        assert r.status_code == 200 and "<html" not in r.get_data(as_text=True)
        return form_fields(r.get_data(as_text=True))

    fields = op(fields, "add_cat")
    assert len([k for k in fields if re.fullmatch(r"c\d+\.name", k)]) == n_cats + 1
    fields = op(fields, "add_q:0")
    fields = op(fields, "up_cat:1")  # reorder: category 1 moves to the top
    assert fields["c0.name"].startswith("AI Risk Management Framework")
    fields = op(fields, "del_cat:0")
    assert fields["c0.name"] == "About this assistant"
    # switching mode re-renders the entry with a text field for the prompt
    fields["c0.q0.mode"] = "prompt"
    fields = op(fields, "")
    assert "c0.q0.text" in fields


def test_save_is_validated_atomic_versioned_and_live_without_restart(client):
    login(client)
    base_sha, html = editor_state(client)
    fields = form_fields(html)
    fields["c1.q0.label"] = "Renamed: the four AI RMF functions?"
    token = csrf_token(client, "/admin/questions")
    response = client.post("/admin/questions", data={**fields, "csrf_token": token}, headers=HX)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    assert "Saved as version 2" in response.get_data(as_text=True)
    path = client.application.config["SETTINGS"].questions_path
    saved = json.loads(path.read_text())
    assert saved["categories"][1]["questions"][0] == "Renamed: the four AI RMF functions?"
    assert not list(path.parent.glob(".questions_config.json.*.tmp"))  # temp file replaced, none left
    assert count(client, ConfigVersion) == 2  # the default as v1, the edit as v2
    assert "Renamed: the four AI RMF functions?" in client.get("/").get_data(as_text=True)


def test_broken_json_is_rejected_with_a_clear_message_and_nothing_saved(client):
    login(client)
    base_sha, _ = editor_state(client)
    path = client.application.config["SETTINGS"].questions_path
    response = post(client, "/admin/questions", {"raw_json": '{"categories": [', "base_sha": base_sha},
                    htmx=True, token_from="/admin/questions")
    assert response.status_code == 422
    assert "Not valid JSON" in response.get_data(as_text=True)
    assert not path.exists() and count(client, ConfigVersion) == 0


def test_schema_errors_are_shown_inline(client):
    login(client)
    base_sha, html = editor_state(client)
    fields = form_fields(html)
    fields["c1.q1.label"] = ""  # a plain question with no text
    fields["c2.name"] = ""
    token = csrf_token(client, "/admin/questions")
    response = client.post("/admin/questions", data={**fields, "csrf_token": token}, headers=HX)
    body = response.get_data(as_text=True)
    assert response.status_code == 422
    assert "categories[2].name: is required" in body and "categories[1].questions[1]" in body
    assert 'class="question-edit invalid"' in body
    bad = {"categories": [{"name": "x", "questions": [{"label": "a", "prompt": "p"}, {"label": "A"}]}]}
    response = post(client, "/admin/questions", {"raw_json": json.dumps(bad), "base_sha": base_sha},
                    token_from="/admin/questions")
    assert response.status_code == 422
    assert "duplicate label" in response.get_data(as_text=True)
    assert not client.application.config["SETTINGS"].questions_path.exists()


def test_save_based_on_an_older_version_is_refused(client):
    login(client)
    old_sha, html = editor_state(client)
    token = csrf_token(client, "/admin/questions")
    fields = form_fields(html)
    first = client.post("/admin/questions", data={**fields, "c0.name": "First admin", "csrf_token": token})
    assert first.status_code == 200
    second = client.post("/admin/questions", data={**fields, "c0.name": "Second admin", "csrf_token": token})
    assert second.status_code == 409
    assert "Someone saved the questions" in second.get_data(as_text=True)
    saved = json.loads(client.application.config["SETTINGS"].questions_path.read_text())
    assert saved["categories"][0]["name"] == "First admin"


def test_concurrent_saves_one_wins_one_is_refused(app):
    clients = [app.test_client(), app.test_client()]
    for c in clients:
        login(c)
    states = [editor_state(c) for c in clients]
    assert states[0][0] == states[1][0]
    tokens = [csrf_token(c, "/admin/questions") for c in clients]
    codes = [None, None]
    start = threading.Barrier(2)

    def save(i):
        fields = form_fields(states[i][1])
        fields["c0.name"] = f"Admin {i}"
        start.wait()
        codes[i] = clients[i].post("/admin/questions", data={**fields, "csrf_token": tokens[i]}).status_code

    threads = [threading.Thread(target=save, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(codes) == [200, 409]
    winner = codes.index(200)
    saved = json.loads(app.config["SETTINGS"].questions_path.read_text())
    assert saved["categories"][0]["name"] == f"Admin {winner}"
    assert count(app, ConfigVersion) == 2


def test_versions_list_and_restore(client):
    login(client)
    base_sha, html = editor_state(client)
    token = csrf_token(client, "/admin/questions")
    fields = form_fields(html)
    assert client.post("/admin/questions", data={**fields, "c0.name": "Changed", "csrf_token": token}).status_code == 200
    new_sha, html = editor_state(client)
    assert "v1" in html and "v2" in html
    restored = client.post("/admin/questions/restore/1", data={"csrf_token": token, "base_sha": new_sha})
    assert restored.status_code == 200 and "Restored version 1 as version 3" in restored.get_data(as_text=True)
    saved = json.loads(client.application.config["SETTINGS"].questions_path.read_text())
    assert saved["categories"][0]["name"] == "About this assistant"
    assert client.post("/admin/questions/restore/99", data={"csrf_token": token, "base_sha": new_sha}).status_code == 404


def test_preview_shows_a_direct_answer(client):
    login(client)
    _, html = editor_state(client)
    token = csrf_token(client, "/admin/questions")
    response = client.post("/admin/questions/preview", data={**form_fields(html), "target": "0:0", "csrf_token": token},
                           headers=HX)
    body = response.get_data(as_text=True)
    assert response.status_code == 200 and 'aria-label="Preview"' in body and "Shown verbatim" in body


def test_admin_save_without_csrf_token_is_refused(client):
    login(client)
    base_sha, _ = editor_state(client)
    response = client.post("/admin/questions", data={"raw_json": "{}", "base_sha": base_sha})
    assert response.status_code == 400


def test_rejected_json_keeps_the_structured_editor_on_the_live_questions(client):
    """After a broken JSON save, the structured form must still hold the live questions: an empty
    form there would save an empty topic panel on its next Save."""
    login(client)
    base_sha, html = editor_state(client)
    live = form_fields(html)
    response = post(client, "/admin/questions", {"raw_json": '{"categories": [', "base_sha": base_sha},
                    htmx=True, token_from="/admin/questions")
    assert response.status_code == 422
    body = response.get_data(as_text=True)
    assert '{&#34;categories&#34;: [</textarea>' in body  # the typed text is kept for fixing
    after = form_fields(body)
    assert after["c0.name"] == live["c0.name"] and after["c1.q0.label"] == live["c1.q0.label"]


def test_restoring_a_version_that_is_not_a_valid_config_is_refused(client):
    """Version 1 records the file as it was before the first save, even a broken hand edit."""
    login(client)
    path = client.application.config["SETTINGS"].questions_path
    path.write_text('{"categories": [ broken', encoding="utf-8")
    base_sha, html = editor_state(client)
    assert "The file on disk is invalid" in html
    token = csrf_token(client, "/admin/questions")
    assert client.post("/admin/questions", data={**form_fields(html), "csrf_token": token}).status_code == 200
    new_sha, _ = editor_state(client)
    saved = path.read_text(encoding="utf-8")
    response = client.post("/admin/questions/restore/1", data={"csrf_token": token, "base_sha": new_sha})
    assert response.status_code == 422
    assert "Version 1 cannot be restored" in response.get_data(as_text=True)
    assert path.read_text(encoding="utf-8") == saved and count(client, ConfigVersion) == 2


def _admin_row(app):
    from nistchat.extensions import db
    from nistchat.models import AdminSession
    with app.app_context():
        return db.session.query(AdminSession).order_by(AdminSession.created_at.desc()).first().id


def _age_admin_session(app, **delta):
    from datetime import timedelta

    from nistchat.extensions import db
    from nistchat.models import AdminSession
    with app.app_context():
        for row in db.session.query(AdminSession):
            for column, minutes in delta.items():
                setattr(row, column, getattr(row, column) - timedelta(minutes=minutes))
        db.session.commit()


def test_logout_revokes_a_copied_session_cookie(app):
    browser, thief = app.test_client(), app.test_client()
    login(browser)
    copied = browser.get_cookie("session").value
    thief.set_cookie("session", copied)
    assert thief.get("/admin/questions").status_code == 200
    post(browser, "/admin/logout", token_from="/admin")
    thief.set_cookie("session", copied)
    assert thief.get("/admin/questions").status_code == 302
    assert browser.get("/admin/questions").status_code == 302


def test_log_out_everywhere_ends_every_admin_login(app):
    laptop, desktop = app.test_client(), app.test_client()
    login(laptop)
    login(desktop)
    response = post(desktop, "/admin/logout-everywhere", token_from="/admin")
    assert response.status_code == 302
    assert laptop.get("/admin/questions").status_code == 302
    assert desktop.get("/admin/questions").status_code == 302
    token = csrf_token(laptop)
    assert laptop.post("/admin/logout-everywhere", data={"csrf_token": token}).status_code == 403  # not an admin now
    login(laptop)  # a fresh login works again
    assert laptop.get("/admin/questions").status_code == 200


def test_an_idle_admin_login_expires(app):
    client = app.test_client()
    login(client)
    _age_admin_session(app, last_seen_at=29)
    assert client.get("/admin/questions").status_code == 200  # used within 30 minutes: still on (and touched)
    _age_admin_session(app, last_seen_at=31)
    assert client.get("/admin/questions").status_code == 302


def test_an_admin_login_ends_after_its_lifetime_even_when_used(app):
    client = app.test_client()
    login(client)
    _age_admin_session(app, created_at=11 * 60)
    assert client.get("/admin/questions").status_code == 200
    _age_admin_session(app, created_at=2 * 60)
    assert client.get("/admin/questions").status_code == 302


def test_a_cookie_that_only_says_admin_is_not_an_admin(client):
    with client.session_transaction() as session:
        session["admin"] = True  # what a login stored before sessions were held on the server
    assert client.get("/admin/questions").status_code == 302
    with client.session_transaction() as session:
        session["admin"] = "made-up-token"
    assert client.get("/admin/questions").status_code == 302


def test_session_cookie_secure_is_a_setting(tmp_path, light_runtime):
    from .web_support import build_app
    assert "Secure" not in build_app(tmp_path / "a", light_runtime).test_client().get("/").headers["Set-Cookie"]
    secure = build_app(tmp_path / "b", light_runtime, settings={"session_cookie_secure": True}).test_client()
    assert "Secure" in secure.get("/", base_url="https://localhost").headers["Set-Cookie"]


def test_failed_logins_are_logged_and_locked_out_with_backoff(app, caplog):
    from nistchat.auth import login_throttle
    client = app.test_client()
    now = [1000.0]
    login_throttle(app).clock = lambda: now[0]

    def attempt(password):
        return post(client, "/admin/login", {"password": password}, token_from="/admin")

    for _ in range(4):
        assert attempt("wrong").status_code == 401
    fifth = attempt("wrong")
    assert fifth.status_code == 401 and "Try again in 30 seconds" in fifth.get_data(as_text=True)
    assert "admin login failed from 127.0.0.1 (5 in a row; locked out for 30 s)" in caplog.text
    locked = attempt(ADMIN_PASSWORD)  # even the right password waits out the lockout
    assert locked.status_code == 429 and "Try again in 31 seconds" in locked.get_data(as_text=True)
    assert int(locked.headers["Retry-After"]) >= 31  # Flask-Limiter may put its own, later, window here
    now[0] += 31
    assert "Try again in 60 seconds" in attempt("wrong").get_data(as_text=True)  # doubled
    now[0] += 61
    assert attempt(ADMIN_PASSWORD).status_code == 302
    assert client.get("/admin/questions").status_code == 200
    assert login_throttle(app).locked_for("127.0.0.1") == 0

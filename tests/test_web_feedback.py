"""👍/👎 on answers: one vote per browser per answer, changeable, a reason for 👎, CSRF-checked;
shown in History, counted on /metrics, exported with the logs."""
from __future__ import annotations

import csv
import io
import json

import pytest

from nistchat.models import Feedback, Message

from .web_support import DIRECT_LABEL, HX, ask_and_stream, count, login, post, stored


def votes(client):
    from nistchat.extensions import db
    with client.application.app_context():
        return [(f.vote, f.reason, f.text) for f in db.session.query(Feedback).order_by(Feedback.id)]


def test_an_answer_offers_a_vote_and_the_vote_can_be_changed(client):
    mid, events = ask_and_stream(client, DIRECT_LABEL, topic=True)
    assert f'id="feedback-{mid}"' in dict(events)["final"]  # the stored answer swapped in carries the form
    page = client.get("/").get_data(as_text=True)
    assert f'hx-post="/feedback/{mid}"' in page and "Should not have answered" in page
    up = post(client, f"/feedback/{mid}", {"vote": "up"}, htmx=True)
    assert up.status_code == 200 and 'value="up" aria-pressed="true"' in up.get_data(as_text=True)
    assert votes(client) == [("up", None, None)]
    no_reason = post(client, f"/feedback/{mid}", {"vote": "down"}, htmx=True)
    assert no_reason.status_code == 422 and "Choose what was wrong" in no_reason.get_data(as_text=True)
    assert votes(client) == [("up", None, None)]  # a refused change loses nothing
    down = post(client, f"/feedback/{mid}", {"vote": "down", "reason": "wrong_source", "text": " cites the\x00 wrong part "},
                htmx=True)
    html = down.get_data(as_text=True)
    assert down.status_code == 200 and 'value="down" aria-pressed="true"' in html and "Wrong source" in html
    assert votes(client) == [("down", "wrong_source", "cites the wrong part")]  # one row per browser, changed
    assert 'value="wrong_source" checked' in client.get("/").get_data(as_text=True)


def test_bad_votes_are_refused_with_a_reason(client):
    mid, _ = ask_and_stream(client, DIRECT_LABEL, topic=True)
    assert post(client, f"/feedback/{mid}", {"vote": "maybe"}, htmx=True).status_code == 422
    assert post(client, f"/feedback/{mid}", {"vote": "down", "reason": "boring"}, htmx=True).status_code == 422
    too_long = post(client, f"/feedback/{mid}", {"vote": "up", "text": "x" * 2001}, htmx=True)
    assert too_long.status_code == 422 and "2,000" in too_long.get_data(as_text=True)
    assert post(client, "/feedback/987654", {"vote": "up"}, htmx=True).status_code == 404
    assert client.post(f"/feedback/{mid}", data={"vote": "up"}, headers=HX).status_code == 400  # no CSRF token
    assert count(client, Feedback) == 0


def test_votes_are_per_browser_and_only_on_answers_it_can_see(app):
    alice, bob, admin = app.test_client(), app.test_client(), app.test_client()
    mid, _ = ask_and_stream(alice, DIRECT_LABEL, topic=True)
    assert post(bob, f"/feedback/{mid}", {"vote": "up"}, htmx=True).status_code == 404
    plain = post(alice, f"/feedback/{mid}", {"vote": "up"})  # without script: back to the answer
    assert plain.status_code == 302 and plain.headers["Location"].endswith(f"#msg-{mid}")
    login(admin)
    assert post(admin, f"/feedback/{mid}", {"vote": "down", "reason": "incomplete"}, htmx=True).status_code == 200
    assert sorted(v for v, _, _ in votes(alice)) == ["down", "up"]


def test_feedback_is_in_history_the_logs_and_the_metrics(client):
    mid, _ = ask_and_stream(client, DIRECT_LABEL, topic=True)
    post(client, f"/feedback/{mid}", {"vote": "down", "reason": "should_not_have_answered", "text": "off topic"}, htmx=True)
    assert "👎 1" in client.get("/history").get_data(as_text=True)
    record = json.loads(client.get("/logs.jsonl").get_data(as_text=True).splitlines()[0])
    assert [(f["vote"], f["reason"], f["text"]) for f in record["feedback"]] == [("down", "should_not_have_answered", "off topic")]
    row = next(csv.DictReader(io.StringIO(client.get("/logs.csv").get_data(as_text=True))))
    assert json.loads(row["feedback"])[0]["reason"] == "should_not_have_answered"
    login(client)
    data = client.get("/metrics.json").get_json()["feedback"]
    assert (data["up"], data["down"]) == (0, 1) and data["reasons"] == {"should_not_have_answered": 1}
    assert list(data["by_reader"].values()) == [{"up": 0, "down": 1}]
    assert data["by_risk"] == {(stored(client, Message, mid).risk or "none"): {"up": 0, "down": 1}}
    assert data["per_day"][-1]["down"] == 1 and len(data["per_day"]) == 14
    page = client.get("/metrics").get_data(as_text=True)
    assert 'id="feedback-totals"' in page and "Should not have answered 1" in page
    assert 'nistchat_feedback{vote="down",window="week"} 1' in client.get("/metrics.prom").get_data(as_text=True)
    assert stored(client, Feedback, 1).message_id == mid


def test_an_admin_turns_a_down_vote_into_a_reported_item_that_an_eval_run_scores(tmp_path, tiny_runtime):
    """The tiny index (a made-up document no code knows): the 👎 becomes an item of the
    `reported` set, exported in the golden format, and `nistchat eval retrieval --set reported`
    scores it (retrieval: the answer run is the same set through the same loader, and slow)."""
    from click.testing import CliRunner

    from nistchat.cli import main

    from .web_support import build_app

    app = build_app(tmp_path, tiny_runtime)
    client = app.test_client()
    mid, _ = ask_and_stream(client, DIRECT_LABEL, topic=True)
    post(client, f"/feedback/{mid}", {"vote": "down", "reason": "should_have_answered", "text": "ask about widgets"},
         htmx=True)
    assert client.get("/admin/feedback").status_code == 302  # admins only
    login(client)
    page = client.get("/admin/feedback").get_data(as_text=True)
    assert "Should have answered" in page and "ask about widgets" in page and "Make it an evaluation item" in page
    fid = stored(client, Feedback, 1).id
    form = {"question": "How often is a widget reviewed?", "doc": "NIST.AI.999-9", "category": "factual",
            "answer": "Before release and again every quarter."}
    invented = post(client, f"/admin/feedback/{fid}/item", {**form, "evidence": "Widgets are reviewed every single day."},
                    token_from="/admin/feedback")
    assert invented.status_code == 422 and "Not found in Guidance on Widget Assurance" in invented.get_data(as_text=True)
    assert "How often is a widget reviewed?" in invented.get_data(as_text=True)  # what was typed is kept
    saved = post(client, f"/admin/feedback/{fid}/item",
                 {**form, "evidence": "each widget is reviewed before release  and again every quarter."},
                 token_from="/admin/feedback")
    assert saved.status_code == 302 and "made=r001" in saved.headers["Location"]
    assert "Evaluation item <b>r001</b>" in client.get("/admin/feedback").get_data(as_text=True)
    lines = client.get("/admin/feedback/reported.jsonl").get_data(as_text=True).splitlines()
    assert [json.loads(line) for line in lines] == [{
        "id": "r001", "doc": "NIST.AI.999-9", "category": "factual", "question": "How often is a widget reviewed?",
        "evidence": ["each widget is reviewed before release  and again every quarter."],
        "answer": "Before release and again every quarter."}]
    assert "reported" in client.get("/evals").get_data(as_text=True)  # the page offers the set
    runtime = tiny_runtime.derived({"instance_dir": str(tmp_path / "instance")})  # the app's database
    out = CliRunner().invoke(main, ["eval", "retrieval", "--set", "reported", "--mode", "hybrid", "--k", "3"],
                             obj=runtime)
    assert out.exit_code == 0, out.output
    assert "reported set" in out.output and "1 questions" in out.output and "stored as run 1" in out.output


@pytest.mark.slow
def test_a_reported_item_is_scored_by_an_answer_run(tmp_path, tiny_runtime):
    """The same set through `nistchat eval answers` (the 0.5B reader, a short answer, no verifier)."""
    from click.testing import CliRunner

    from nistchat.cli import main
    from nistchat.evals.store import run_dict
    from nistchat.extensions import db
    from nistchat.models import EvalRun, ReportedItem

    from .web_support import build_app

    app = build_app(tmp_path, tiny_runtime)
    with app.app_context():
        db.session.add(ReportedItem(question="How often is a widget reviewed?", doc="NIST.AI.999-9", category="factual",
                                    evidence=["Each widget is reviewed before release and again every quarter."],
                                    answer="Before release and again every quarter."))
        db.session.commit()
    runtime = tiny_runtime.derived({"instance_dir": str(tmp_path / "instance")})
    out = CliRunner().invoke(main, ["eval", "answers", "--set", "reported", "--judge", "0", "-o", "answer.max_tokens=60",
                                    "-o", "verify.mode=never", "-o", "verify.weak_retrieval=false"], obj=runtime)
    assert out.exit_code == 0, out.output
    with app.app_context():
        run = run_dict(db.session.get(EvalRun, 1), full=True)
    assert run["status"] == "done" and run["sets"] == "reported"
    (item,) = run["items"]
    assert item["question_id"] == "r001" and item["set"] == "reported" and item["scores"]

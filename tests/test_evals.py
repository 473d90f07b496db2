"""Evaluation runs: scoring, storage in SQLite, the compare output, and the /evals page, on real
runs of the real engine over a small subset of the dev set."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nistchat.cli import main
from nistchat.engine.evaluation.answers import (deterministic_scores, fallback_terms, judge_scores, passed, quarter,
                                          subset, term_present)
from nistchat.engine.evaluation.report import compare, format_compare, headline
from nistchat.engine.evaluation.retrieval import load_golden, resolve_sets

from .conftest import REPO, SHORT_ANSWERS
from .web_support import build_app, login, ndjson, post, wait_for

DEV = REPO / "data" / "eval" / "golden.jsonl"


# -- scoring (no model)

def test_fallback_key_terms_and_matching():
    terms = fallback_terms("Functionality, Operational and Security monitoring of the AI RMF 1.0 core.")
    assert terms[:3] == ["Functionality", "Operational", "Security"] and "RMF" in terms and "1.0" not in terms
    assert "the" not in [t.lower() for t in terms] and len(fallback_terms("word " * 3 + " ".join(
        f"term{i}x" for i in range(20)))) == 8
    assert term_present("monitors", "Monitor the system") and not term_present("privacy", "security")


def test_deterministic_scores_for_answerable_negative_and_list_questions():
    item = {"category": "table", "question": "What are the three kinds of widget?", "evidence": ["alpha beta"],
            "answer": "x", "key_terms": ["alpha", "gamma"]}
    outcome = {"answer": "The three kinds are:\n- alpha\n- beta", "refused": False,
               "passages": [{"text": "... Alpha  BETA ..."}], "verdicts": [{"supported": True}, {"supported": False}]}
    s = deterministic_scores(item, outcome)
    assert s == {"evidence_hit": 1.0, "wrongly_refused": 0.0, "key_terms": 0.5, "list_length": 0.0, "supported": 0.5}
    assert passed(item, s)
    refused = deterministic_scores(item, {**outcome, "refused": True, "passages": []})
    assert refused["wrongly_refused"] == 1.0 and refused["evidence_hit"] == 0.0 and "supported" not in refused
    negative = {"category": "negative", "question": "What fines?", "evidence": [], "answer": ""}
    assert deterministic_scores(negative, {"refused": True, "answer": "not covered"}) == {
        "refused_negative": 1.0, "refused_or_flagged": 1.0}
    flagged = deterministic_scores(negative, {"refused": False, "flagged": True, "answer": "It is 5 %."})
    assert flagged == {"refused_negative": 0.0, "refused_or_flagged": 1.0} and not passed(negative, flagged)
    assert not passed(negative, deterministic_scores(negative, {"refused": False, "answer": "It is 5 %."}))


def test_judged_scores_are_quarter_steps_and_skip_refusals():
    assert [quarter(x) for x in (0, 0.2, 0.4, 0.6, 0.9, 1)] == [0, 0.25, 0.5, 0.5, 1.0, 1.0]
    item = {"question": "Why?", "answer": "Because of alpha; because of beta, and gamma."}
    outcome = {"answer": "It is due to alpha here. It is due to delta there.", "refused": False,
               "passages": [{"text": "alpha is the reason"}]}
    calls = []

    def check(doc, claim):
        calls.append((doc, claim))
        return "alpha" in claim or claim.startswith("This text answers")

    j = judge_scores(check, item, outcome, doc_chars=500)
    assert j == {"faithfulness": 0.5, "relevance": 1.0, "completeness": 0.5, "correctness": 0.5}
    assert len(calls) <= 3 + 1 + 4 + 3
    assert judge_scores(check, item, {**outcome, "refused": True}, 500) == {}


def test_subset_mixes_categories_in_file_order():
    items = [{"id": i, "category": c} for i, c in enumerate("aaabbc")]
    assert [x["id"] for x in subset(items, 3)] == [0, 3, 5]
    assert subset(items, None) == items


def test_sets_resolve_and_a_missing_test_set_is_said(tmp_path):
    (tmp_path / "golden.jsonl").write_text("{}\n", encoding="utf-8")
    found, notes = resolve_sets("both", [tmp_path])
    assert list(found) == ["dev"] and "no test set" in notes[0]
    with pytest.raises(ValueError):
        resolve_sets("test", [tmp_path])
    (tmp_path / "test.jsonl").write_text("{}\n", encoding="utf-8")
    assert list(resolve_sets("both", [tmp_path])[0]) == ["dev", "test"]
    found, notes = resolve_sets("all", [tmp_path])
    assert list(found) == ["dev", "test"] and "no dev2 set" in notes[0]
    (tmp_path / "dev_office.jsonl").write_text("{}\n", encoding="utf-8")
    assert resolve_sets("all", [tmp_path]) == ({name: tmp_path / f for name, f in
                                                (("dev", "golden.jsonl"), ("dev2", "dev_office.jsonl"),
                                                 ("test", "test.jsonl"))}, [])


def _run(run_id, values, judge="embedded:small", kind="answers"):
    return {"id": run_id, "kind": kind, "config": {"k": 4 + run_id}, "items": [
        {"set": "dev", "question_id": f"x{i}", "category": "c", "question": f"q{i}", "passed": bool(v),
         "scores": {"key_terms": v, "wrongly_refused": 0.0}, "judged": {"relevance": {"score": v, "judge": judge}}}
        for i, v in enumerate(values)]}


def test_compare_reports_change_interval_and_flips_and_never_mixes_judges_silently():
    a, b = _run(1, [1.0, 0.0, 1.0, 0.5]), _run(2, [1.0, 1.0, 1.0, 0.5])
    result = compare(a, b)
    kt = result["metrics"]["key_terms"]
    assert kt["change"] == 0.25 and kt["better"] == 1 and kt["worse"] == 0 and kt["noise"]  # one flip is noise
    assert [i["question_id"] for i in result["items"]] == ["x1"]
    assert result["items"][0]["changes"]["key_terms"] == [0.0, 1.0]
    assert "relevance (judged)" in result["metrics"] and result["config_changes"] == {"k": [5, 6]}
    text = format_compare(result)
    assert "within noise" in text and "dev/x1 [c] key_terms 0->1" in text and "k: 5 -> 6" in text
    other = compare(a, _run(2, [1.0, 1.0, 1.0, 0.5], judge="ollama:minicheck"))
    assert "relevance (judged)" not in other["metrics"] and "different judges" in other["warnings"][0]
    mixed = compare(a, _run(2, [1.0] * 4, judge="ollama:minicheck"), mixed_judges=True)
    assert "relevance (judged)" in mixed["metrics"] and "mix judges" in mixed["warnings"][0]
    with pytest.raises(ValueError):
        compare(a, _run(2, [1.0], kind="retrieval"))
    h = headline(a["items"])["dev"]
    assert h["n"] == 4 and h["scores"]["key_terms"] == 0.625 and h["judges"] == ["embedded:small"]


# -- real runs, stored in a real SQLite database

@pytest.fixture
def small_set(tmp_path):
    items = subset(load_golden(DEV), 3)
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    return path


@pytest.fixture
def eval_runtime(runtime, tmp_path):
    """The session engine with its own instance dir (its own database) for this test."""
    return runtime.derived({"instance_dir": str(tmp_path / "instance")})


def cli(rt, *args):
    out = CliRunner().invoke(main, ["eval", *args], obj=rt)
    assert out.exit_code == 0, out.output
    return out.output


def test_retrieval_runs_are_stored_listed_and_compared(eval_runtime, small_set):
    first = cli(eval_runtime, "retrieval", "--set", str(small_set), "--mode", "hybrid", "--k", "1", "--note", "k1")
    assert "stored as run 1" in first and "evidence-hit@1" in first
    cli(eval_runtime, "retrieval", "--set", str(small_set), "--mode", "hybrid", "--k", "6")
    runs = [json.loads(line) for line in cli(eval_runtime, "runs", "--json").splitlines() if line.startswith("{")]
    assert [r["id"] for r in runs] == [2, 1] and all(r["status"] == "done" for r in runs)
    assert runs[1]["config"]["retrieval_k"] == 1 and runs[0]["config"]["git"] and runs[0]["config"]["index"]
    assert runs[0]["config"]["settings"]["answer"]["k"] == 6 and "secret_key" not in runs[0]["config"]["settings"]["web"]
    assert runs[0]["metrics"]["sets"]["small"]["n"] == 3
    text = cli(eval_runtime, "compare", "1", "2")
    assert text.startswith("run 1 -> run 2 (retrieval, 3 questions in both)") and "retrieval_k: 1 -> 6" in text
    assert "hit" in text and "questions that changed" in text
    listing = cli(eval_runtime, "runs")
    assert "#1 retrieval done" in listing and "(k1)" in listing


def test_answer_run_scores_and_stores_items(eval_runtime, small_set):
    from nistchat.evals.store import run_dict
    from nistchat.extensions import db
    from nistchat.models import EvalRun

    out = cli(eval_runtime, "answers", "--set", str(small_set), "--limit", "2", "--judge", "1", "--k", "4",
              "-o", "answer.max_tokens=80", "-o", "answer.context_tokens=600", "-o", "verify.mode=never",
              "-o", "verify.weak_retrieval=false")
    assert "stored as run 1" in out
    app = build_app(eval_runtime.settings.instance_dir.parent, eval_runtime)
    with app.app_context():
        run = run_dict(db.session.get(EvalRun, 1), full=True)
    assert run["config"]["k"] == 4 and run["status"] == "done" and len(run["items"]) == 2
    first, second = run["items"]
    assert first["result"]["passages"] and "total" in first["timings_ms"] and first["scores"]
    judged = [i for i in run["items"] if i["judged"]]
    assert len(judged) <= 1 and all(j["judge"].startswith("embedded:") for i in judged for j in i["judged"].values())
    assert all(v in (0, 0.25, 0.5, 0.75, 1.0) for i in judged for v in (j["score"] for j in i["judged"].values()))
    assert not second["judged"]


def test_the_page_starts_a_run_shows_it_compares_and_exports(eval_runtime, small_set, tmp_path, monkeypatch):
    import nistchat.evals.store as store

    monkeypatch.setattr(store, "eval_dirs", lambda _settings: [tmp_path / "sets"])
    (tmp_path / "sets").mkdir()
    (tmp_path / "sets" / "golden.jsonl").write_text(small_set.read_text(encoding="utf-8"), encoding="utf-8")
    app = build_app(tmp_path, eval_runtime)
    client = app.test_client()
    assert client.get("/evals").status_code in (302, 403)
    login(client)
    for k in ("1", "6"):
        response = post(client, "/evals/start", {"kind": "retrieval", "set": "both", "k": k}, htmx=True,
                        token_from="/evals")
        assert response.status_code == 200, response.get_data(as_text=True)
        assert 'hx-trigger="every 2s"' in response.get_data(as_text=True) or "done" in response.get_data(as_text=True)
        wait_for(lambda: "every 2s" not in client.get("/evals/job").get_data(as_text=True), timeout=120, step=0.5)
    page = client.get("/evals").get_data(as_text=True)
    assert "<b>dev</b> n=3" in page and "hit=" in page  # the page ran the dev set, not a file
    detail = client.get("/evals/1").get_data(as_text=True)
    assert "<svg" in detail and "hit rate per category" in detail and "mean time per stage" in detail
    assert "no test set" in detail
    failed = client.get("/evals/1?failed=1&set=dev").get_data(as_text=True)
    assert failed.count("<tr class=") <= detail.count("<tr class=")
    compared = client.get("/evals/compare?a=1&b=2").get_data(as_text=True)
    assert "95 % interval" in compared and "retrieval_k" in compared
    csv_body = client.get("/evals/1/export.csv").get_data(as_text=True)
    assert csv_body.splitlines()[0].startswith("run,set,question_id") and len(csv_body.splitlines()) == 4
    lines = client.get("/evals/2/export.jsonl").get_data(as_text=True).splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["run"] == 2 and "result" in json.loads(lines[0])


def test_a_run_whose_process_stopped_is_listed_as_interrupted_not_running(eval_runtime, small_set):
    import subprocess
    import sys

    from nistchat.evals.store import create_run
    from nistchat.extensions import db
    from nistchat.models import EvalRun

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # reaped: its pid names no process now
    app = build_app(eval_runtime.settings.instance_dir.parent, eval_runtime)
    with app.app_context():
        dead = create_run(eval_runtime, "retrieval", str(small_set))
        dead.config = {**dead.config, "process": {**dead.config["process"], "pid": gone.pid}}
        live = create_run(eval_runtime, "retrieval", str(small_set))  # this process: still running
        db.session.commit()
        dead_id, live_id = dead.id, live.id
    listing = cli(eval_runtime, "runs")
    assert f"#{dead_id} retrieval interrupted" in listing and "interrupted after 0 of 9 items" in listing
    assert f"#{live_id} retrieval running" in listing
    with app.app_context():
        assert db.session.get(EvalRun, dead_id).finished_at is not None


def test_a_page_started_answer_run_completes_while_a_person_chats_and_the_chat_waits_one_answer_at_most(
        runtime, small_set, tmp_path, monkeypatch):
    """The reader queue serves chat before eval: a question asked mid-run waits only for the eval
    answer already using the reader, not for the rest of the run."""
    import nistchat.evals.store as store
    from nistchat.extensions import db
    from nistchat.models import EvalRun

    rt = runtime.derived({"instance_dir": str(tmp_path / "instance"), **SHORT_ANSWERS})
    monkeypatch.setattr(store, "eval_dirs", lambda _settings: [tmp_path / "sets"])
    (tmp_path / "sets").mkdir()
    (tmp_path / "sets" / "golden.jsonl").write_text(small_set.read_text(encoding="utf-8"), encoding="utf-8")
    app = build_app(tmp_path, rt)
    admin = app.test_client()
    login(admin)
    response = post(admin, "/evals/start", {"kind": "answers", "set": "dev", "judge": "0"}, htmx=True,
                    token_from="/evals")
    assert response.status_code == 200, response.get_data(as_text=True)
    # the run's first answer is using the reader, and more eval questions wait behind it
    wait_for(lambda: rt.queue.snapshot()["serving"] == 1, timeout=120, step=0.05)

    events = ndjson(app.test_client().post("/api/ask", json={"question": "What does TEVV stand for?"})
                    .get_data(as_text=True))
    final = next(e for e in events if e.get("type") == "final")
    with app.app_context():
        run = db.session.get(EvalRun, store.job(app).run_id)
        done_when_chat_answered, total = run.done, run.total
    assert done_when_chat_answered < total  # the chat did not wait for the whole run
    wait_for(lambda: not store.job(app).busy(), timeout=600, step=0.5)
    with app.app_context():
        run = db.session.get(EvalRun, store.job(app).run_id)
        assert run.status == "done" and run.done == total == 3
        longest = max(item.ms for item in run.items)
    assert final["queue_ms"] <= longest + 1000, (final["queue_ms"], longest)

"""Evaluation metrics on a scripted retriever, and the CLI contracts (retrieve --json/--batch,
diagnose, eval retrieval) on the real session runtime."""
import json

import pytest
from click.testing import CliRunner

from nistchat.cli import main
from nistchat.engine.evaluation.retrieval import evaluate, first_evidence_rank, format_table, match_norm, missing_evidence
from nistchat.engine.types import Passage, Retrieval, Trace

GOLDEN = [
    {"id": "q1", "category": "table", "question": "a", "evidence": ["Alpha beta gamma", "delta epsilon"]},
    {"id": "q2", "category": "table", "question": "b", "evidence": ["zeta eta"]},
    {"id": "q3", "category": "factual", "question": "c", "evidence": ["theta iota"]},
    {"id": "q4", "category": "negative", "question": "d", "evidence": []},
]
TEXTS = {"a": ["noise", "| **Alpha**  beta\ngamma | x", "delta   EPSILON"],  # hit, first evidence at rank 2
         "b": ["zeta eta here"],  # hit at rank 1
         "c": ["theta", "iota"],  # split across passages: a miss
         "d": ["whatever"]}


class Scripted:
    def __init__(self):
        self.calls = []

    def retrieve(self, question, *, k=6, history=None, mode="hybrid"):
        self.calls.append((question, mode))
        passages = [Passage(i, f"p{i}", "D", "T", "S", "prose", None, t, 1.0)
                    for i, t in enumerate(TEXTS[question][:k], start=1)]
        return Retrieval(question, passages, Trace(), {"total": 10.0 if mode == "hybrid" else 20.0})


def test_match_norm_drops_markup_case_and_space():
    assert match_norm("| **Functionality  Monitoring**:\n Does |") == "functionality monitoring : does"
    assert missing_evidence(["Functionality Monitoring:"], ["| **Functionality** Monitoring: |"]) == []


def test_evidence_must_sit_inside_one_passage():
    assert missing_evidence(["theta iota"], ["theta", "iota"]) == ["theta iota"]
    assert first_evidence_rank(["nope", "iota"], ["theta", "iota"]) == 2
    assert first_evidence_rank(["nope"], ["theta"]) is None


def test_evaluate_metrics_per_mode_and_category():
    r = Scripted()
    rep = evaluate(r, GOLDEN, k=6, modes=("hybrid", "bm25"), warmup=1)
    h = rep["modes"]["hybrid"]
    assert rep["n_answerable"] == 3 and rep["n_questions"] == 4
    assert h["hits"] == 2 and h["hit"] == pytest.approx(2 / 3, abs=1e-4)
    assert h["mrr"] == pytest.approx((1 / 2 + 1 + 0) / 3, abs=1e-4)
    assert h["per_category"]["table"] == {"n": 2, "hit": 1.0, "mrr": 0.75}
    assert h["per_category"]["factual"]["hit"] == 0.0 and "negative" not in h["per_category"]
    assert [m["id"] for m in h["misses"]] == ["q3"] and h["misses"][0]["missing"] == ["theta iota"]
    assert h["p50_ms"] == 10.0 and rep["modes"]["bm25"]["p95_ms"] == 20.0
    assert ("d", "bm25") in r.calls  # negatives still run: they count for latency
    table = format_table(rep)
    assert "hybrid" in table and "bm25" in table and "evidence-hit@6 (n=3)" in table and "q3" in table


def test_k_limits_what_counts():
    rep = evaluate(Scripted(), GOLDEN, k=1, modes=("hybrid",), warmup=0)
    assert [m["id"] for m in rep["modes"]["hybrid"]["misses"]] == ["q1", "q3"]


# -- CLI contracts on the real runtime (models load once per session)

def test_retrieve_json_contract(runtime):
    out = CliRunner().invoke(main, ["retrieve", "What is the GOVERN function?", "--json", "--k", "4"], obj=runtime)
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(d) == {"question", "passages", "trace", "timings_ms"}
    assert set(d["timings_ms"]) == {"embed", "dense", "bm25", "fuse", "rerank", "expand", "total"}
    assert len(d["passages"]) == 4
    assert set(d["passages"][0]) == {"rank", "id", "doc", "title", "section", "kind", "page", "text", "score"}
    assert [s["name"] for s in d["trace"]["stages"]][:3] == ["query", "embed", "dense"]


def test_retrieve_batch_one_object_per_line(runtime, tmp_path):
    f = tmp_path / "qs.txt"
    f.write_text("What is TEVV?\n\nWhat is data poisoning?\n", encoding="utf-8")
    out = CliRunner().invoke(main, ["retrieve", "--batch", str(f), "--json", "--mode", "bm25"], obj=runtime)
    assert out.exit_code == 0, out.output
    lines = [json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith("{")]
    assert [d["question"] for d in lines] == ["What is TEVV?", "What is data poisoning?"]
    assert all(d["timings_ms"]["embed"] == 0 for d in lines)


def test_retrieve_table_and_usage_error(runtime):
    out = CliRunner().invoke(main, ["retrieve", "What is confabulation?", "--k", "2"], obj=runtime)
    assert out.exit_code == 0 and " 1. [" in out.output and "timings ms:" in out.output
    assert CliRunner().invoke(main, ["retrieve"], obj=runtime).exit_code == 2


def test_diagnose_prints_every_stage(runtime):
    out = CliRunner().invoke(main, ["diagnose", "What is DP-SGD?"], obj=runtime)
    assert out.exit_code == 0, out.output
    for heading in ("1. query", "dense top 12", "bm25 top 12", "fusion", "6. rerank", "diversity caps",
                    "parents (with neighbours)", "assembled context"):
        assert heading in out.output
    assert "tokens" in out.output


def test_eval_retrieval_command(runtime, tmp_path):
    golden = tmp_path / "g.jsonl"
    golden.write_text("\n".join(json.dumps(x) for x in [
        {"id": "t1", "category": "acronym", "question": "What does TEVV stand for?",
         "evidence": ["test, evaluation, verification, and validation"]},
        {"id": "t2", "category": "negative", "question": "What fines does the EU AI Act set?", "evidence": []},
    ]), encoding="utf-8")
    out = CliRunner().invoke(main, ["eval", "retrieval", "--golden", str(golden), "--json"], obj=runtime)
    assert out.exit_code == 0, out.output
    rep = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(rep["modes"]) == {"hybrid", "dense", "bm25"} and rep["n_answerable"] == 1
    text = CliRunner().invoke(main, ["eval", "retrieval", "--golden", str(golden), "--mode", "bm25"], obj=runtime)
    assert text.exit_code == 0 and "evidence-hit@6 (n=1)" in text.output


def test_ablation_turns_each_named_rule_off_in_turn(runtime, tmp_path):
    """Each rule in evaluation.RULES has a switch the retriever honours: turning off exact identifier
    matching loses an identifier question that only the exact list finds at k=1."""
    from nistchat.engine.evaluation import RULES, rule_off
    from nistchat.engine.evaluation.retrieval import ablate, format_ablation

    item = {"id": "t1", "category": "acronym", "question": "What does GV-1.3-001 say?",
            "evidence": ["GV-1.3-001"]}
    table = ablate(runtime.retriever, {"a": [item]}, {n: rule_off(n)["retrieval"] for n in RULES}, k=1)
    assert set(table) == {"all rules", *RULES}
    assert table["all rules"]["a"] == 1.0 and table["exact_identifiers"]["a"] <= table["all rules"]["a"]
    text = format_ablation(table, k=1)
    assert "a hit@1" in text and "exact_identifiers" in text
    golden = tmp_path / "g.jsonl"
    golden.write_text(json.dumps(item), encoding="utf-8")
    out = CliRunner().invoke(main, ["eval", "retrieval", "--set", str(golden), "--ablate", "--k", "1", "--json"],
                             obj=runtime)
    assert out.exit_code == 0, out.output
    assert set(json.loads(out.stdout.strip().splitlines()[-1])["ablation"]) == {"all rules", *RULES}

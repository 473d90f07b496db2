"""Benchmark the answer pipeline with the embedded readers, and measure refusal rates.

Per reader (default: the 0.5B and 1.5B GGUFs) and for N golden questions (answerable ones, spread
over the set in file order): time to sources, time to first token, total, prompt tokens sent.
Then, with the first reader: the refusal/flag rate on every golden negative (full pipeline) and
the wrong-refusal rate on answerable questions (the pre-generation gate on all of them, plus the
post-generation refusals among the benchmarked ones). Models load before timing starts.

Targets on the 2-core machine: sources <= 1 s, first token <= 12 s (0.5B); negatives refused or
flagged >= 90 %; answerable wrongly refused <= 10 %.

    python scripts/bench_answer.py [--n 10] [--readers qwen2.5-coder-0.5b,qwen2.5-coder-1.5b] [--json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from nistchat.config import load_settings
from nistchat.engine.answer import refusal
from nistchat.engine.runtime import Runtime

ROOT = Path(__file__).resolve().parents[1]


def spread(rows: list[dict], n: int) -> list[dict]:
    """n rows evenly spaced through the list (deterministic, covers all documents in file order)."""
    if n <= 0:
        return []
    if n >= len(rows):
        return rows
    step = len(rows) / n
    return [rows[int(i * step)] for i in range(n)]


def timed_answer(runtime: Runtime, question: str) -> dict:
    start = time.perf_counter()
    out = {"sources_s": None, "first_token_s": None}
    final, error = None, None
    for event in runtime.answer(question, []):
        now = time.perf_counter() - start
        if event.type == "sources" and out["sources_s"] is None:
            out["sources_s"] = now
        elif event.type == "token" and out["first_token_s"] is None:
            out["first_token_s"] = now
        elif event.type == "final":
            final = event.answer.to_dict()
        elif event.type == "error":
            error = event.failure.to_dict()
    out["total_s"] = time.perf_counter() - start
    if error:
        return {**out, "error": f"{error['kind']}: {error['message']}"}
    unsupported = sum(1 for s in final["sentences"] if not s["supported"])
    return {**out, "prompt_tokens": final.get("prompt_tokens", 0), "refused": final["refused"],
            "refusal_reason": final.get("refusal_reason", ""), "risk": final["risk"], "verified": final["verified"],
            "retried": final["retried"], "flagged": unsupported > 0, "answer": final["answer"][:300]}


def make_runtime(reader: str) -> Runtime:
    settings = load_settings(overrides={"gguf": reader})  # the site's config.toml applies too
    runtime = Runtime(settings)
    t = time.perf_counter()
    runtime.retrieve("warm-up question about AI risk", k=6)
    runtime.models.get("reader")
    runtime.models.get("verifier")
    print(f"# {reader}: models and index loaded in {time.perf_counter() - t:.1f} s (not counted)", flush=True)
    return runtime


def summary(rows: list[dict], key: str) -> str:
    vals = [r[key] for r in rows if r.get(key) is not None]
    if not vals:
        return "-"
    return f"median {statistics.median(vals):.2f} max {max(vals):.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--golden", type=Path, default=ROOT / "data" / "eval" / "golden.jsonl")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--readers", default="qwen2.5-coder-0.5b,qwen2.5-coder-1.5b")
    ap.add_argument("--skip-negatives", action="store_true")
    ap.add_argument("--json", action="store_true", help="print one JSON line per answer as well")
    args = ap.parse_args()

    rows = [json.loads(line) for line in args.golden.read_text(encoding="utf-8").splitlines() if line.strip()]
    answerable = [r for r in rows if r["category"] != "negative"]
    negatives = [r for r in rows if r["category"] == "negative"]
    sample = spread(answerable, args.n)
    readers = [r.strip() for r in args.readers.split(",") if r.strip()]
    first_runtime, results = None, {}

    for reader in readers:
        runtime = make_runtime(reader)
        first_runtime = first_runtime or runtime
        results[reader] = []
        print(f"\n== {reader}: {len(sample)} golden questions")
        print(f"{'id':<6}{'risk':<5}{'sources_s':>10}{'first_s':>9}{'total_s':>9}{'prompt_tok':>11}  outcome")
        for row in sample:
            r = timed_answer(runtime, row["question"])
            r["id"] = row["id"]
            results[reader].append(r)
            outcome = r.get("error") or ("REFUSED " + r["refusal_reason"] if r["refused"] else
                                         ("flagged" if r["flagged"] else "ok") + (" retried" if r["retried"] else ""))
            print(f"{row['id']:<6}{r.get('risk', '-'):<5}{r['sources_s']:>10.2f}"
                  f"{(r['first_token_s'] or 0):>9.1f}{r['total_s']:>9.1f}{r.get('prompt_tokens', 0):>11}  {outcome}",
                  flush=True)
            if args.json:
                print(json.dumps({"reader": reader, **r}), flush=True)
        rs = results[reader]
        print(f"   sources: {summary(rs, 'sources_s')} s · first token: {summary(rs, 'first_token_s')} s · "
              f"total: {summary(rs, 'total_s')} s · prompt tokens: {summary(rs, 'prompt_tokens')}")
        if reader is not readers[-1] and runtime is not first_runtime:
            del runtime

    # refusal rates, with the first reader
    rt = first_runtime
    vocab = refusal.vocabulary(rt.index)
    gate_wrong = []
    for row in answerable:
        retrieval = rt.retrieve(row["question"], k=6)
        if refusal.gate(retrieval, rt.settings, rt.models.optional("embedder"), vocab).refuse:
            gate_wrong.append(row["id"])
    post_wrong = [r["id"] for r in results[readers[0]] if r.get("refused")]
    print(f"\n== refusal rates ({readers[0]})")
    print(f"   answerable refused by the gate: {len(gate_wrong)}/{len(answerable)} "
          f"({len(gate_wrong) / len(answerable):.0%}) {gate_wrong}")
    print(f"   answerable refused after generation (benchmarked sample): {len(post_wrong)}/{len(sample)} {post_wrong}")
    if not args.skip_negatives:
        caught = []
        for row in negatives:
            r = timed_answer(rt, row["question"])
            status = "refused " + r["refusal_reason"] if r.get("refused") else ("flagged" if r.get("flagged") else
                                                                                 r.get("error") or "ANSWERED")
            print(f"   {row['id']} {status:<22} {r['total_s']:6.1f}s  {row['question'][:60]}", flush=True)
            if r.get("refused") or r.get("flagged"):
                caught.append(row["id"])
        print(f"   negatives refused or flagged: {len(caught)}/{len(negatives)} ({len(caught) / len(negatives):.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the reader worker process costs: first token and total time of the same answers with the
reader in a worker process (the default) and in-process, in one run, alternating which goes first.

Both runtimes load their models before timing starts. Answers are greedy, so the two modes should
also give the same text; the script reports how many did.

    python scripts/bench_reader_process.py [--n 10] [--reader qwen2.5-coder-0.5b] [--json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from nistchat.config import load_settings
from nistchat.engine.runtime import Runtime

from bench_answer import spread  # same questions as the answer benchmark picks

ROOT = Path(__file__).resolve().parents[1]
MODES = ("worker", "inprocess")


def timed(runtime: Runtime, question: str) -> dict:
    start = time.perf_counter()
    out: dict = {"first_token_s": None, "answer": None}
    for event in runtime.answer(question, []):
        if event.type == "token" and out["first_token_s"] is None:
            out["first_token_s"] = time.perf_counter() - start
        elif event.type == "final":
            out["answer"] = event.answer.text
            out["refused"] = event.answer.refused
        elif event.type == "error":
            out["error"] = event.failure.message
    out["total_s"] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--reader", default="qwen2.5-coder-0.5b")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rows = [json.loads(line) for line in (ROOT / "data" / "eval" / "golden.jsonl").read_text().splitlines()
            if line.strip()]
    answerable = [r for r in rows if r["category"] != "negative"]
    questions = [r["question"] for r in spread(answerable, args.n)]

    runtimes = {}
    for mode in MODES:
        runtime = Runtime(load_settings(overrides={"gguf": args.reader, "reader_process": mode}))
        t = time.perf_counter()
        runtime.retrieve("warm-up question about AI risk", k=6)
        runtime.models.self_test()
        runtimes[mode] = runtime
        print(f"# {mode}: loaded in {time.perf_counter() - t:.1f} s (not counted)", flush=True)

    results: dict[str, list[dict]] = {m: [] for m in MODES}
    for i, question in enumerate(questions):
        order = MODES if i % 2 == 0 else tuple(reversed(MODES))
        for mode in order:
            results[mode].append(timed(runtimes[mode], question))
        print(f"{i + 1:>2}. " + "  ".join(f"{m}: {results[m][-1]['first_token_s'] or 0:.2f}/{results[m][-1]['total_s']:.2f} s"
                                        for m in MODES), flush=True)

    def med(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in results[mode] if r.get(key) is not None)

    same = sum(1 for a, b in zip(results["worker"], results["inprocess"]) if a["answer"] == b["answer"])
    summary = {m: {"first_token_median_s": round(med(m, "first_token_s"), 3), "total_median_s": round(med(m, "total_s"), 3),
                   "total_sum_s": round(sum(r["total_s"] for r in results[m]), 2),
                   "errors": sum(1 for r in results[m] if r.get("error"))} for m in MODES}
    overhead = {k: round(100 * (summary["worker"][k] / summary["inprocess"][k] - 1), 1)
                for k in ("first_token_median_s", "total_median_s", "total_sum_s")}
    report = {"reader": args.reader, "questions": len(questions), "modes": summary,
              "worker_overhead_percent": overhead, "identical_answers": same}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for m in MODES:
        s = summary[m]
        print(f"{m:>9}: first token median {s['first_token_median_s']:.2f} s, total median {s['total_median_s']:.2f} s, "
              f"sum {s['total_sum_s']:.1f} s, errors {s['errors']}")
    print(f"worker overhead: first token {overhead['first_token_median_s']:+.1f} %, total median "
          f"{overhead['total_median_s']:+.1f} %, sum {overhead['total_sum_s']:+.1f} %; "
          f"identical answers {same}/{len(questions)}")


if __name__ == "__main__":
    main()

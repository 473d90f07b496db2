"""Retrieval benchmark: p50/p95 latency per question after models and index are loaded, and
evidence-hit@6 / MRR on the golden set (hybrid). Usage: python scripts/bench_retrieval.py [--k 6] [--repeat 2]"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from nistchat.config import PROJECT_ROOT, load_settings
from nistchat.engine.evaluation import evaluate, load_golden
from nistchat.engine.runtime import Runtime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--k", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=2, help="timed passes over the questions")
    ap.add_argument("--golden", type=Path, default=PROJECT_ROOT / "data" / "eval" / "golden.jsonl")
    args = ap.parse_args()
    t = time.perf_counter()
    runtime = Runtime(load_settings())
    retriever = runtime.retriever
    golden = load_golden(args.golden)
    retriever.retrieve(golden[0]["question"], k=args.k)  # load + warm the embedder
    print(f"load: {time.perf_counter() - t:.1f} s (index, embedder, first query)")
    latencies = []
    for _ in range(args.repeat):
        for item in golden:
            latencies.append(retriever.retrieve(item["question"], k=args.k).timings_ms["total"])
    print(f"latency over {len(latencies)} retrievals: p50 {np.percentile(latencies, 50):.1f} ms, "
          f"p95 {np.percentile(latencies, 95):.1f} ms, max {max(latencies):.1f} ms")
    report = evaluate(retriever, golden, k=args.k, modes=("hybrid",), warmup=0)["modes"]["hybrid"]
    print(f"hybrid evidence-hit@{args.k}: {report['hit']:.3f} ({report['hits']} of "
          f"{sum(1 for g in golden if g.get('evidence'))}), MRR {report['mrr']:.3f}")
    print("misses: " + (" ".join(m["id"] for m in report["misses"]) or "none"))


if __name__ == "__main__":
    main()

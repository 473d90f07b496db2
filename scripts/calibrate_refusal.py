"""Calibrate the pre-generation refusal threshold on the golden set.

For every golden question, run real retrieval and compute each candidate score (refusal.FEATURES);
print the distributions for negatives (not in the corpus) and answerable questions, and choose the
threshold by a stated rule: the largest threshold that wrongly refuses at most MAX_WRONG (0 by
default) of answerable questions. The gate refuses only what is clearly off-topic; the reader and
the checks after generation decide the rest (docs/decisions.md, "refusal"). The second rule
(a named term the corpus never mentions AND a score below the median answerable score) gets its
threshold from the same distributions. Copy the printed thresholds into nistchat/engine/answer/refusal.py
([refusal] threshold and unknown_term_threshold) with the counts.

    python scripts/calibrate_refusal.py [--golden data/eval/golden.jsonl] [--max-wrong 0] [--json]
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from nistchat.config import load_settings
from nistchat.config import RefusalSettings
from nistchat.engine.answer.refusal import FEATURES, stated_ids, unknown_terms, vocabulary
from nistchat.engine.runtime import Runtime

ROOT = Path(__file__).resolve().parents[1]


def choose_threshold(negatives: list[float], answerable: list[float], max_wrong: float) -> dict:
    """Largest threshold t (refuse when score < t) with wrong refusals <= max_wrong of answerable."""
    allowed = math.floor(max_wrong * len(answerable))
    ordered = sorted(answerable)
    # refusing below ordered[allowed] wrongly refuses exactly the `allowed` lowest answerable scores
    t = ordered[allowed] if allowed < len(ordered) else ordered[-1] + 1e-6
    t = round(t - 5e-5, 4)  # just under that answerable score, so it is kept
    return {"threshold": t,
            "negatives_refused": sum(s < t for s in negatives), "negatives": len(negatives),
            "answerable_refused": sum(s < t for s in answerable), "answerable": len(answerable)}


def describe(values: list[float]) -> str:
    if not values:
        return "n=0"
    q = statistics.quantiles(values, n=10) if len(values) > 1 else values * 9
    return (f"n={len(values)} min={min(values):.3f} p10={q[0]:.3f} p50={statistics.median(values):.3f} "
            f"p90={q[-1]:.3f} max={max(values):.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--golden", type=Path, default=ROOT / "data" / "eval" / "golden.jsonl")
    ap.add_argument("--max-wrong", type=float, default=0.0)
    ap.add_argument("--json", action="store_true", help="also print per-question scores as JSON lines")
    args = ap.parse_args()

    runtime = Runtime(load_settings())
    rows = [json.loads(line) for line in args.golden.read_text(encoding="utf-8").splitlines() if line.strip()]
    embedder = runtime.models.optional("embedder")
    vocab = vocabulary(runtime.index)
    unknown: dict[str, list[str]] = {}
    group_of: dict[str, str] = {}
    exempt: set[str] = set()  # a passage states the question's framework id: rule 1 never refuses it
    scores: dict[str, dict[str, list[tuple[float, str]]]] = {f: {"negative": [], "answerable": []} for f in FEATURES}
    for row in rows:
        retrieval = runtime.retrieve(row["question"], k=6)
        group = "negative" if row["category"] == "negative" else "answerable"
        unknown[row["id"]] = unknown_terms(row["question"], vocab)
        group_of[row["id"]] = group
        if stated_ids(row["question"], retrieval.passages):
            exempt.add(row["id"])
        per_q = {"unknown_terms": unknown[row["id"]], "stated_ids": row["id"] in exempt}
        for name, feature in FEATURES.items():
            value = feature(retrieval, embedder)
            if value is not None:
                scores[name][group].append((value, row["id"]))
                per_q[name] = round(value, 4)
        if args.json:
            print(json.dumps({"id": row["id"], "group": group, **per_q}))

    for name, groups in scores.items():
        neg = [s for s, _ in groups["negative"]]
        ans = [s for s, _ in groups["answerable"]]
        print(f"\n== {name}")
        if not neg or not ans:
            print("   not available in this configuration (no scores)")
            continue
        print(f"   negatives : {describe(neg)}")
        print(f"   answerable: {describe(ans)}")
        print("   lowest answerable: " + ", ".join(f"{i}={s:.3f}" for s, i in sorted(groups["answerable"])[:6]))
        print("   highest negatives: " + ", ".join(f"{i}={s:.3f}" for s, i in sorted(groups["negative"])[-6:]))
        choice = choose_threshold([s for s, i in groups["negative"] if i not in exempt],
                                  [s for s, i in groups["answerable"] if i not in exempt], args.max_wrong)
        print(f"   rule: largest threshold refusing <= {args.max_wrong:.0%} of answerable -> "
              f"threshold {choice['threshold']:.4f}: refuses {choice['negatives_refused']}/{choice['negatives']} "
              f"negatives, {choice['answerable_refused']}/{choice['answerable']} answerable")
        if name != RefusalSettings().feature:
            continue
        t2 = round(statistics.median(ans), 4)

        refused = {i for group in groups.values() for s, i in group
                   if (s < choice["threshold"] and i not in exempt) or (unknown[i] and s < t2)}
        print(f"   exempt from the score rule (a passage states their framework id): {sorted(exempt)}")
        print(f"   unknown-term rule: threshold = median answerable score {t2:.4f}; questions with unknown "
              f"terms: " + ", ".join(f"{i} {unknown[i]}" for i in unknown if unknown[i]))
        neg_ref = sum(1 for i in refused if group_of[i] == "negative")
        ans_ref = sum(1 for i in refused if group_of[i] == "answerable")
        print(f"   both rules: refuse {neg_ref}/{len(neg)} negatives, {ans_ref}/{len(ans)} answerable "
              f"-> [refusal] threshold = {choice['threshold']:.4f}, unknown_term_threshold = {t2:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

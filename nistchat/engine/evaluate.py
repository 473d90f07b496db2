"""Retrieval evaluation on the golden set: does the evidence reach the reader?

Why evidence-hit@k and not document recall: the reader can only answer from the passages it is
given, so a question counts as a hit only when every one of its evidence strings appears inside
one of the k returned passages. Matching is forgiving about formatting (ingestion may drop
markdown `*` and `|`, reflow whitespace) but not about wording. Hybrid, dense-only and BM25-only
run side by side over the same questions, so a fusion that hurts shows up in the same table.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

MODES = ("hybrid", "dense", "bm25")


def load_golden(path: Path) -> list[dict]:
    items = []
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
    return items


def match_norm(text: str) -> str:
    """Lowercase, drop `*` and `|` (markdown emphasis / table pipes), collapse whitespace."""
    return re.sub(r"\s+", " ", re.sub(r"[*|]", " ", text)).strip().lower()


def first_evidence_rank(evidence: list[str], texts: list[str]) -> int | None:
    """1-based rank of the first passage containing any evidence string, or None."""
    needles = [match_norm(e) for e in evidence]
    for rank, text in enumerate(texts, start=1):
        hay = match_norm(text)
        if any(n in hay for n in needles):
            return rank
    return None


def missing_evidence(evidence: list[str], texts: list[str]) -> list[str]:
    """Evidence strings found in none of the passages (each must sit inside one passage)."""
    hays = [match_norm(t) for t in texts]
    return [e for e in evidence if not any(match_norm(e) in h for h in hays)]


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 1) if values else 0.0


def evaluate(retriever, golden: list[dict], *, k: int = 6, modes=MODES, warmup: int = 2) -> dict:
    """Run every golden question through each mode; metrics over answerable items, latency over all."""
    for item in golden[:warmup]:  # load models, fill caches: latency is measured after load
        retriever.retrieve(item["question"], k=k)
    answerable = [g for g in golden if g.get("evidence")]
    report: dict = {"k": k, "n_questions": len(golden), "n_answerable": len(answerable), "modes": {}}
    for mode in modes:
        latencies, per_cat, misses, hits, rr = [], defaultdict(lambda: [0, 0, 0.0]), [], 0, 0.0
        for item in golden:
            result = retriever.retrieve(item["question"], k=k, mode=mode)
            latencies.append(result.timings_ms["total"])
            if not item.get("evidence"):
                continue
            texts = [p.text for p in result.passages]
            missing = missing_evidence(item["evidence"], texts)
            first = first_evidence_rank(item["evidence"], texts)
            cat = per_cat[item.get("category", "?")]
            cat[0] += 1
            if not missing:
                hits += 1
                cat[1] += 1
            rank_rr = 1.0 / first if first else 0.0
            rr += rank_rr
            cat[2] += rank_rr
            if missing:
                misses.append({"id": item["id"], "category": item.get("category"), "doc": item.get("doc"),
                               "question": item["question"], "missing": missing, "first_evidence_rank": first,
                               "passages": [f"{p.doc}:{p.section}" for p in result.passages]})
        n = max(1, len(answerable))
        report["modes"][mode] = {
            "hit": round(hits / n, 4), "mrr": round(rr / n, 4), "hits": hits,
            "per_category": {c: {"n": v[0], "hit": round(v[1] / v[0], 4), "mrr": round(v[2] / v[0], 4)}
                             for c, v in sorted(per_cat.items())},
            "p50_ms": _pct(latencies, 50), "p95_ms": _pct(latencies, 95), "misses": misses,
        }
    return report


def format_table(report: dict) -> str:
    """The side-by-side table: one column per mode."""
    modes = list(report["modes"])
    k, width = report["k"], 10
    rows = [("", [m for m in modes]),
            (f"evidence-hit@{k} (n={report['n_answerable']})", [f"{report['modes'][m]['hit']:.3f}" for m in modes]),
            ("MRR", [f"{report['modes'][m]['mrr']:.3f}" for m in modes])]
    cats = sorted({c for m in modes for c in report["modes"][m]["per_category"]})
    for c in cats:
        stats = [report["modes"][m]["per_category"].get(c) for m in modes]
        n = next((s["n"] for s in stats if s), 0)
        rows.append((f"  {c} (n={n}) hit / MRR", [f"{s['hit']:.2f}/{s['mrr']:.2f}" if s else "-" for s in stats]))
    rows.append((f"p50 ms (n={report['n_questions']})", [f"{report['modes'][m]['p50_ms']:.1f}" for m in modes]))
    rows.append(("p95 ms", [f"{report['modes'][m]['p95_ms']:.1f}" for m in modes]))
    label_w = max(len(r[0]) for r in rows) + 2
    lines = [f"{label:<{label_w}}" + "".join(f"{v:>{width}}" for v in values) for label, values in rows]
    for m in modes:
        misses = report["modes"][m]["misses"]
        lines.append("")
        lines.append(f"{m} misses ({len(misses)}):")
        for miss in misses:
            lines.append(f"  {miss['id']} [{miss['category']}] {miss['question']}")
            for e in miss["missing"]:
                lines.append(f"      missing: {e!r}")
    return "\n".join(lines)

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

from ..retrieval import Retriever

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


def evaluate(retriever: Retriever, golden: list[dict], *, k: int = 6, modes=MODES, warmup: int = 2,
             on_item=None) -> dict:
    """Run every golden question through each mode; metrics over answerable items, latency over all.
    `report["items"]` has one record per question (scores per mode, the first mode's passages), for
    storing a run; `on_item(done, total)` is called after each question of each mode (progress)."""
    for item in golden[:warmup]:  # load models, fill caches: latency is measured after load
        retriever.retrieve(item["question"], k=k)
    answerable = [g for g in golden if g.get("evidence")]
    report: dict = {"k": k, "n_questions": len(golden), "n_answerable": len(answerable), "modes": {}}
    records = {id(item): {"scores": {}, "timings_ms": {}} for item in golden}
    done = 0
    for mode in modes:
        latencies, per_cat, misses, hits, rr = [], defaultdict(lambda: [0, 0, 0.0]), [], 0, 0.0
        for item in golden:
            result = retriever.retrieve(item["question"], k=k, mode=mode)
            latencies.append(result.timings_ms["total"])
            record = records[id(item)]
            record["timings_ms"][mode] = result.timings_ms["total"]
            if mode == modes[0]:
                record.update(passages=[{"doc": p.doc, "section": p.section, "text": p.text} for p in result.passages],
                              stages_ms=dict(result.timings_ms))
            done += 1
            if on_item:
                on_item(done, len(golden) * len(modes))
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
            suffix = "" if mode == modes[0] else f"_{mode}"
            record["scores"].update({f"hit{suffix}": 0.0 if missing else 1.0, f"rr{suffix}": round(rank_rr, 4)})
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
    report["items"] = [records[id(item)] for item in golden]
    return report


def format_table(report: dict) -> str:
    """The side-by-side table: one column per mode."""
    return format_sets({"": report})


def format_sets(reports: dict[str, dict]) -> str:
    """One column per (set, mode): dev and test side by side, each with its modes."""
    cols = [(name, m) for name, rep in reports.items() for m in rep["modes"]]
    width = max(10, *(len(f"{n} {m}") + 2 for n, m in cols))

    def ns(key: str) -> str:
        return "/".join(str(rep[key]) for rep in reports.values())

    def stat(name, m):
        return reports[name]["modes"][m]

    k = next(iter(reports.values()))["k"]
    rows = [("", [f"{n} {m}".strip() for n, m in cols]),
            (f"evidence-hit@{k} (n={ns('n_answerable')})", [f"{stat(n, m)['hit']:.3f}" for n, m in cols]),
            ("MRR", [f"{stat(n, m)['mrr']:.3f}" for n, m in cols])]
    cats = sorted({c for n, m in cols for c in stat(n, m)["per_category"]})
    for c in cats:
        stats = [stat(n, m)["per_category"].get(c) for n, m in cols]
        counts = {name: next((s["n"] for (n, _m), s in zip(cols, stats) if s and n == name), 0) for name in reports}
        rows.append((f"  {c} (n={'/'.join(str(v) for v in counts.values())}) hit / MRR",
                     [f"{s['hit']:.2f}/{s['mrr']:.2f}" if s else "-" for s in stats]))
    rows.append((f"p50 ms (n={ns('n_questions')})", [f"{stat(n, m)['p50_ms']:.1f}" for n, m in cols]))
    rows.append(("p95 ms", [f"{stat(n, m)['p95_ms']:.1f}" for n, m in cols]))
    label_w = max(len(r[0]) for r in rows) + 2
    lines = [f"{label:<{label_w}}" + "".join(f"{v:>{width}}" for v in values) for label, values in rows]
    for n, m in cols:
        misses = stat(n, m)["misses"]
        lines.append("")
        lines.append(f"{(n + ' ' + m).strip()} misses ({len(misses)}):")
        for miss in misses:
            lines.append(f"  {miss['id']} [{miss['category']}] {miss['question']}")
            for e in miss["missing"]:
                lines.append(f"      missing: {e!r}")
    return "\n".join(lines)


SETS = ("dev", "dev2", "test")
# `reported`: items admins made from 👎 answers (written from the database, instance/eval/)
SET_FILES = {"dev": "golden.jsonl", "dev2": "dev_office.jsonl", "test": "test.jsonl", "reported": "reported.jsonl"}
# Named groups of sets. dev and dev2 are tuned on; test is held out. `both` keeps its old meaning.
SET_GROUPS = {"all": SETS, "both": ("dev", "test")}
SET_SPECS = (*SETS, *SET_GROUPS, "reported")


def first_file(eval_dirs: list[Path], file: str) -> Path | None:
    """`file` in the first of `eval_dirs` that holds it (an instance's own sets before the shipped ones)."""
    return next((d / file for d in eval_dirs if (d / file).is_file()), None)


def resolve_sets(spec: str, eval_dirs: list[Path]) -> tuple[dict[str, Path], list[str]]:
    """`dev`, `dev2`, `test`, `all`, `both` or a FILE -> {set name: path}, and notes for a person (a
    set of a group that is missing is said, and the group runs without it)."""
    notes: list[str] = []
    if spec not in SET_SPECS:
        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"No evaluation set {spec!r}: say {', '.join(SET_SPECS)} or a JSONL file.")
        return {path.stem: path}, notes
    found = {}
    members = SET_GROUPS.get(spec, (spec,))
    for name in members:
        path = first_file(eval_dirs, SET_FILES[name])
        if path is None:
            if spec == name:
                raise ValueError(f"No {name} set ({SET_FILES[name]} in {', '.join(map(str, eval_dirs))}).")
            notes.append(f"no {name} set ({SET_FILES[name]} not found): showing the others only")
            continue
        found[name] = path
    if not found:
        raise ValueError("No evaluation set found.")
    return found, notes


def ablate(retriever: Retriever, sets: dict[str, list[dict]], rules: dict[str, dict], *, k: int = 6) -> dict[str, dict]:
    """Hybrid evidence-hit@k per set with every rule on ("all rules"), then with each rule off in
    turn. `rules` maps a rule's name to the retrieval-settings change that turns it off. Why per
    set: a rule that helps dev but not test was fitted to dev."""
    def hits(r) -> dict[str, float]:
        return {name: evaluate(r, items, k=k, modes=("hybrid",), warmup=0)["modes"]["hybrid"]["hit"]
                for name, items in sets.items()}

    table = {"all rules": hits(retriever)}
    for name, change in rules.items():
        table[name] = hits(retriever.with_config(**change))
    return table


def format_ablation(table: dict[str, dict], k: int = 6) -> str:
    sets = list(next(iter(table.values())))
    base = table["all rules"]
    lines = [f"{'rule turned off':<24}" + "".join(f"{f'{s} hit@{k}':>16}" for s in sets)]
    for name, row in table.items():
        cells = [f"{row[s]:.3f}" + ("" if name == "all rules" else f" ({row[s] - base[s]:+.3f})") for s in sets]
        lines.append(f"{name:<24}" + "".join(f"{c:>16}" for c in cells))
    return "\n".join(lines)

"""Stored evaluation runs as plain data: a run's config snapshot, its headline metrics, and the
comparison of two runs. No Flask and no database here: the CLI and the admin page store runs
(nistchat/evals/store.py) and hand plain dicts to these functions.

A run is {"id", "kind", "config", "metrics", "items"}; an item is {"set", "question_id",
"category", "question", "scores": {metric: value}, "judged": {metric: {"score", "judge"}}}.

Why flips and an interval: on a few dozen questions one answer that changes moves a rate by
several points. `compare` gives, per metric, the mean change over the questions both runs
answered with a 95 % interval (paired, normal approximation) and the questions that went up or
down, so a one-question change reads as what it is.
"""
from __future__ import annotations

import dataclasses
import math
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # an evaluation drives the whole engine: the composition root is below it
    from ..runtime import Runtime

LOWER_BETTER = {"wrongly_refused"}
STAGES = ("queue", "retrieve", "first_token", "generate", "verify", "retry", "total")


def _plain(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def git_commit(root: Path) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+changes" if dirty else "") if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def config_snapshot(runtime: Runtime, **extra) -> dict:
    """What a run ran with: the models, backend, k, context budget, every rule switch (the whole
    settings object), the git commit and the index manifest."""
    from ...config import PROJECT_ROOT

    settings = _plain(dataclasses.asdict(runtime.settings))
    for secret in ("secret_key", "admin_password_hash"):
        settings.get("web", {}).pop(secret, None)
    try:
        manifest = dict(runtime.index.manifest)
    except Exception:  # an eval without an index fails later, with the engine's message
        manifest = {}
    try:
        models = runtime.models.active()
    except Exception:
        models = {}
    return {"models": models, "backend": runtime.settings.backends.backend, "k": runtime.settings.answer.k,
            "context_tokens": runtime.settings.answer.context_tokens, "git": git_commit(PROJECT_ROOT),
            "index": {k: v for k, v in manifest.items() if not isinstance(v, (list, dict)) or len(str(v)) < 2000},
            "settings": settings, **extra}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def headline(items: list[dict]) -> dict:
    """Per set: n, the mean of every score, judged means (with their judge), per-category hit and
    refusal rates, mean time per stage."""
    out: dict = {}
    by_set: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        by_set[item.get("set") or "?"].append(item)
    for name, rows in by_set.items():
        scores: dict[str, list[float]] = defaultdict(list)
        judged: dict[str, list[float]] = defaultdict(list)
        judges = set()
        cats: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        stages: dict[str, list[float]] = defaultdict(list)
        for row in rows:
            for metric, value in (row.get("scores") or {}).items():
                if value is not None:
                    scores[metric].append(value)
            for metric, j in (row.get("judged") or {}).items():
                judged[metric].append(j["score"])
                judges.add(j["judge"])
            cat = cats[row.get("category") or "?"]
            s = row.get("scores") or {}
            for metric in ("hit", "evidence_hit", "refused_negative", "refused_or_flagged", "wrongly_refused"):
                if s.get(metric) is not None:
                    cat[metric].append(s[metric])
            for stage, ms in (row.get("timings_ms") or {}).items():
                if isinstance(ms, (int, float)):
                    stages[stage].append(ms)
        out[name] = {"n": len(rows), "passed": sum(1 for r in rows if r.get("passed")),
                     "scores": {m: _mean(v) for m, v in sorted(scores.items())},
                     "judged": {m: _mean(v) for m, v in sorted(judged.items())}, "judges": sorted(judges),
                     "n_judged": max((len(v) for v in judged.values()), default=0),
                     "per_category": {c: {m: _mean(v) for m, v in d.items()} | {"n": sum(
                         1 for r in rows if (r.get("category") or "?") == c)} for c, d in sorted(cats.items())},
                     "stages_ms": {s: _mean(v) for s, v in stages.items()}}
    return out


def judges_of(run: dict) -> set[str]:
    return {j["judge"] for item in run["items"] for j in (item.get("judged") or {}).values()}


def _values(item: dict, judged: bool) -> dict:
    if judged:
        return {m: j["score"] for m, j in (item.get("judged") or {}).items()}
    return {m: v for m, v in (item.get("scores") or {}).items() if v is not None}


def compare(a: dict, b: dict, *, mixed_judges: bool = False) -> dict:
    """Per-metric change from run a to run b over the questions both hold, with a 95 % interval
    and the flips; judged metrics only when both runs had the same judge (or `mixed_judges`,
    which is then said in `warnings`)."""
    if a["kind"] != b["kind"]:
        raise ValueError(f"run {a['id']} is a {a['kind']} run and run {b['id']} a {b['kind']} run: not comparable")
    key = lambda item: (item.get("set"), item.get("question_id") or item.get("question"))  # noqa: E731
    a_items, b_items = {key(i): i for i in a["items"]}, {key(i): i for i in b["items"]}
    common = [k for k in a_items if k in b_items]
    warnings = []
    ja, jb = judges_of(a), judges_of(b)
    use_judged = bool(ja and jb)
    if use_judged and ja != jb:
        if mixed_judges:
            warnings.append(f"judged by different judges (run {a['id']}: {', '.join(sorted(ja))}; "
                            f"run {b['id']}: {', '.join(sorted(jb))}): judged changes mix judges")
        else:
            use_judged = False
            warnings.append(f"judged by different judges (run {a['id']}: {', '.join(sorted(ja))}; "
                            f"run {b['id']}: {', '.join(sorted(jb))}): judged metrics not compared "
                            "(--mixed-judges to compare them anyway)")
    only = len(a_items) - len(common), len(b_items) - len(common)
    if any(only):
        warnings.append(f"{only[0]} questions only in run {a['id']}, {only[1]} only in run {b['id']}: not compared")
    metrics: dict[str, dict] = {}
    changed: dict = {}
    for judged in (False, True):
        if judged and not use_judged:
            continue
        names = sorted({m for k in common for i in (a_items[k], b_items[k]) for m in _values(i, judged)})
        for metric in names:
            label = f"{metric} (judged)" if judged else metric
            diffs, up, down = [], [], []
            for k in common:
                va, vb = _values(a_items[k], judged).get(metric), _values(b_items[k], judged).get(metric)
                if va is None or vb is None:
                    continue
                diffs.append(vb - va)
                if vb != va:
                    better = (vb < va) if metric in LOWER_BETTER else (vb > va)
                    (up if better else down).append(k)
                    changed.setdefault(k, {})[label] = (va, vb)
            if not diffs:
                continue
            n = len(diffs)
            mean = sum(diffs) / n
            sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
            half = 1.96 * sd / math.sqrt(n) if n > 1 else 0.0
            a_mean = sum(_values(a_items[k], judged)[metric] for k in common
                         if metric in _values(a_items[k], judged) and metric in _values(b_items[k], judged)) / n
            metrics[label] = {"n": n, "a": round(a_mean, 4), "b": round(a_mean + mean, 4), "change": round(mean, 4),
                              "ci95": [round(mean - half, 4), round(mean + half, 4)],
                              "better": len(up), "worse": len(down),
                              "noise": (mean - half) <= 0 <= (mean + half) or n < 2,
                              "lower_better": metric in LOWER_BETTER}
    items = [{"set": k[0], "question_id": k[1], "category": a_items[k].get("category"),
              "question": a_items[k].get("question"), "changes": {m: list(v) for m, v in ch.items()},
              "passed": [a_items[k].get("passed"), b_items[k].get("passed")]}
             for k, ch in changed.items()]
    return {"a": a["id"], "b": b["id"], "kind": a["kind"], "n_common": len(common), "warnings": warnings,
            "config_changes": config_changes(a.get("config") or {}, b.get("config") or {}),
            "metrics": metrics, "items": items}


def config_changes(a: dict, b: dict, prefix: str = "") -> dict:
    """Dotted settings that differ between two config snapshots: {key: [a, b]}."""
    out = {}
    for k in sorted(set(a) | set(b)):
        if k in ("index",) and not prefix:
            continue
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out.update(config_changes(va, vb, f"{prefix}{k}."))
        elif va != vb:
            out[prefix + k] = [va, vb]
    return out


def _num(v) -> str:
    return "-" if v is None else (f"{v:.3f}".rstrip("0").rstrip(".") if isinstance(v, float) else str(v))


def format_compare(result: dict) -> str:
    lines = [f"run {result['a']} -> run {result['b']} ({result['kind']}, {result['n_common']} questions in both)"]
    for w in result["warnings"]:
        lines.append(f"WARNING: {w}")
    if result["config_changes"]:
        lines.append("settings changed: " + "; ".join(f"{k}: {_num(v[0])} -> {_num(v[1])}"
                                                      for k, v in result["config_changes"].items()
                                                      if not k.startswith("git")))
    lines.append("")
    width = max([len(m) for m in result["metrics"]] + [6]) + 2
    lines.append(f"{'metric':<{width}}{'n':>4}{'A':>8}{'B':>8}{'change':>9}  {'95% interval':<18}flips (better/worse)")
    for m, s in result["metrics"].items():
        ci = f"[{s['ci95'][0]:+.3f}, {s['ci95'][1]:+.3f}]"
        note = "  within noise" if s["noise"] and s["change"] else ""
        lines.append(f"{m:<{width}}{s['n']:>4}{s['a']:>8.3f}{s['b']:>8.3f}{s['change']:>+9.3f}  {ci:<18}"
                     f"+{s['better']}/-{s['worse']}{note}")
    lines.append("")
    lines.append(f"questions that changed ({len(result['items'])}):")
    for item in result["items"]:
        changes = ", ".join(f"{m} {_num(v[0])}->{_num(v[1])}" for m, v in item["changes"].items())
        lines.append(f"  {item['set']}/{item['question_id']} [{item['category']}] {changes}")
    return "\n".join(lines)

"""Measure false-premise handling: how often the premise check fires, and how answers open.

    python scripts/bench_premise.py firings [FILE.jsonl ...]
        every question of the files (default: the dev splits golden.jsonl and dev_office.jsonl, and
        each turn of conversations_dev.jsonl asked on its own): premises found (yes/no questions'
        claims included, form "polar"), and premises the retrieved passages contradict, by
        category. Retrieval only, no reader.

    python scripts/bench_premise.py answers FILE.jsonl [--category false_premise] [--json OUT]
        each item answered by the full pipeline (the site's settings; -o gguf=… for the reader):
        whether the answer's first sentence confirms the premise, corrects it, or neither, and the
        same for the reader's own first sentence (after the lead the pipeline writes when the
        passages contradict the premise); refusals and flags. The premise is the one the passages
        contradict, else the first found.

Settings come from instance/config.toml and NISTCHAT_* as for `nistchat`, plus -o KEY=VALUE.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

from nistchat.config import load_settings
from nistchat.engine.answer.events import Error, Final, Sources
from nistchat.engine.runtime import Runtime
from nistchat.engine.verification import premise as premises

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT / "data" / "eval"
DEV_FILES = [EVAL / "golden.jsonl", EVAL / "dev_office.jsonl", EVAL / "conversations_dev.jsonl"]


def items_of(path: Path) -> list[dict]:
    """Questions of a set file; a conversation's turns each become one item (kind as category)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if "turns" in row:
            out += [{"id": f"{row['id']}.{i}", "category": t.get("kind", "?"), "question": t["question"]}
                    for i, t in enumerate(row["turns"], 1)]
        else:
            out.append(row)
    return out


def runtime_for(overrides: list[str]) -> Runtime:
    settings = load_settings(overrides=dict(o.split("=", 1) for o in overrides))
    return Runtime(settings)


def firings(rt: Runtime, files: list[Path]) -> int:
    for path in files:
        rows = items_of(path)
        found, contradicted = collections.Counter(), collections.Counter()
        total = collections.Counter(r.get("category", "?") for r in rows)
        for row in rows:
            if not premises.claims(row["question"]):
                continue
            result = premises.check(row["question"], rt.retrieve(row["question"], k=rt.settings.answer.k).passages)
            ps = result.premises
            found[row.get("category", "?")] += 1
            c = result.contradicted
            if c is not None:
                contradicted[row.get("category", "?")] += 1
            print(f"  {row['id']:<8}{row.get('category', '?'):<14}{'CONTRADICTED ' + c.cue if c else 'premise':<24}"
                  f"{ps[0].form:<11}{ps[0].claim[:70]}" + (f"  <- [{c.passage}] {c.sentence[:80]}" if c else ""),
                  flush=True)
        print(f"{path.name}: {len(rows)} questions; premises found in {sum(found.values())} "
              f"({dict(found)}); contradicted in {sum(contradicted.values())} ({dict(contradicted)}); "
              f"categories {dict(total)}\n")
    return 0


def answer(rt: Runtime, question: str) -> dict:
    out: dict = {"passages": []}
    t = time.perf_counter()
    for event in rt.answer(question):
        if isinstance(event, Sources):
            out["passages"] = event.passages
        elif isinstance(event, Final):
            a = event.answer
            stage = next((s for s in a.trace.get("stages", []) if s.get("name") == "premise"), None)
            out.update(text=a.text, refused=a.refused, flagged=a.flagged, retried=a.retried,
                       premise=stage["items"][0] if stage and stage.get("items") else None,
                       unsupported=[s.reason for s in a.sentences if not s.supported],
                       drafts=[x["text"] for x in a.attempts], refusal_reason=a.refusal_reason)
        elif isinstance(event, Error):
            out.update(error=f"{event.failure.kind}: {event.failure.message}", text=event.failure.partial)
    out["s"] = round(time.perf_counter() - t, 1)
    return out


def answers(rt: Runtime, path: Path, category: str | None, json_out: Path | None) -> int:
    rows = [r for r in items_of(path) if category is None or r.get("category") == category]
    tally = collections.Counter()
    sink = json_out.open("w", encoding="utf-8") if json_out else None
    for row in rows:
        out = answer(rt, row["question"])
        check = premises.check(row["question"], out.pop("passages"))
        target = check.contradicted
        if target is None and check.premises:
            target = premises.Contradiction(check.premises[0], 0, "", "")
        answered = target and not out.get("refused") and not out.get("error")
        opening = premises.opening(out.get("text", ""), target) if answered else "-"
        reader = premises.opening(premises.reader_part(out.get("text", ""), check), target) if answered else "-"
        state = "refused" if out.get("refused") else ("error" if out.get("error") else opening)
        tally[state] += 1
        tally[f"reader {reader}"] += reader != "-"
        tally["flagged"] += bool(out.get("flagged"))
        tally["contradicted"] += check.contradicted is not None
        first = (out.get("text") or "").replace("\n", " ")[:160]
        flag = "flag" if out.get("flagged") else ""
        print(f"{row['id']:<14}{state:<10}{reader:<10}{flag:<5}{out['s']:>6.1f}s  {first}", flush=True)
        if sink:
            sink.write(json.dumps({"id": row["id"], "question": row["question"], "opening": state, "reader": reader,
                                   "contradicted": check.to_dict()["contradicted"], **out}) + "\n")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))
    print(f"{path.name} ({category or 'all'}): {len(rows)} items; {counts}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("firings", "answers"))
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--category", help="only items of this category (answers)")
    ap.add_argument("--json", type=Path, help="write one JSON line per answer here (answers)")
    ap.add_argument("-o", "--setting", action="append", default=[], help="KEY=VALUE, e.g. gguf=qwen2.5-coder-0.5b")
    args = ap.parse_args()
    rt = runtime_for(args.setting)
    if args.mode == "firings":
        return firings(rt, args.files or DEV_FILES)
    if len(args.files) != 1:
        ap.error("answers takes one set file")
    return answers(rt, args.files[0], args.category, args.json)


if __name__ == "__main__":
    sys.exit(main())

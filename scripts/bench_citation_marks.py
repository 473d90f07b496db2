"""How many of an answer's sentences carry a citation mark: the reader's own `[n]`, and the
checker's passage shown where the reader wrote none (engine/verification/citations.py `checker_marks`).

One run gives both numbers: the checker's marks are added beside the reader's text, never into
it, so "reader only" is what answers carried before the checker's marks and "reader or checker"
is what they carry now. Counted over the checkable sentences of answers that were not refused,
and separately over the sentences the checker found supported (verified answers only).

    python scripts/bench_citation_marks.py [--set dev] [--limit 10] [--reader qwen2.5-coder-0.5b] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from nistchat.config import load_settings
from nistchat.engine.verification import has_mark
from nistchat.engine.runtime import Runtime
from nistchat.evals.store import load_sets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", dest="spec", default="dev", help="an evaluation set (never the test split for tuning)")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--reader", default="qwen2.5-coder-0.5b")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    runtime = Runtime(load_settings(overrides={"gguf": args.reader}))
    runtime.models.self_test()
    sets, _, _ = load_sets(runtime.settings, args.spec, args.limit)
    rows = []
    for items in sets.values():
        for item in items:
            t = time.perf_counter()
            events = [e for e in runtime.answer(item["question"], []) if e.type in ("final", "error")]
            final = events[-1].answer.to_dict() if events and events[-1].type == "final" else None
            if final is None:
                sys.exit(f"{item.get('id')}: {events[-1].to_dict() if events else 'no final event'}")
            print(f"# {item.get('id')}: {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
            if final is None or final["refused"]:
                rows.append({"id": item.get("id"), "refused": True})
                continue
            n = len(final["sources"])
            checker = {text for s in final["sources"] for text in s.get("checker_sentences") or []}
            supported = [v["text"] for v in final["sentences"] if v["supported"]] if final["verified"] else []
            rows.append({"id": item.get("id"), "refused": False, "verified": final["verified"],
                         "seconds": round(time.perf_counter() - t, 1), **final["marks"],
                         "supported": len(supported),
                         "supported_reader": sum(has_mark(s, n) for s in supported),
                         "supported_any": sum(has_mark(s, n) or s in checker for s in supported)})
    answered = [r for r in rows if not r["refused"]]

    def share(part: str, whole: str) -> str:
        a, b = sum(r[part] for r in answered), sum(r[whole] for r in answered)
        return f"{a}/{b} ({a / b:.0%})" if b else "0/0"

    reader_or_checker = sum(r["reader"] + r["checker"] for r in answered)
    sentences = sum(r["sentences"] for r in answered)
    summary = {"questions": len(rows), "answered": len(answered),
               "verified": sum(r["verified"] for r in answered),
               "sentences_reader_mark": share("reader", "sentences"),
               "sentences_reader_or_checker_mark": f"{reader_or_checker}/{sentences}"
                                                   + (f" ({reader_or_checker / sentences:.0%})" if sentences else ""),
               "supported_reader_mark": share("supported_reader", "supported"),
               "supported_reader_or_checker_mark": share("supported_any", "supported")}
    if args.json:
        print(json.dumps({"summary": summary, "rows": rows}, indent=1))
        return
    for key, value in summary.items():
        print(f"{key:<34} {value}")


if __name__ == "__main__":
    main()

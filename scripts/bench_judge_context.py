"""The reader as judge, two ways: each passage sent alone, or asked inside the answer's own prompt.

For each pair of `data/eval/audit_pairs.jsonl` (a faithful answer and the same answer with one fact
changed) the question's passages are retrieved as an answer's would be, and each of the two
answers is verified by `verify_sentences` exactly as the pipeline does, once per context:
`passage` (the judge's prompt and the passage, `Verifier.check`) and `answer` (the answer's
messages, then the claim and its passage number, `AnswerJudge.check_in_prompt`). Right means the faithful
answer supported and the changed one not. Time is the judge's, per answer; before the `answer`
context's checks the answer's prompt is read, untimed, as the answer itself would have read it.

    python scripts/bench_judge_context.py [--reader qwen2.5-coder-1.5b] [--limit N] [--json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from nistchat.config import load_settings
from nistchat.engine.answer.prompt import build_messages
from nistchat.engine.backends.base import AnswerJudge
from nistchat.engine.runtime import Runtime
from nistchat.engine.text import split_sentences
from nistchat.engine.verification.verify import verify_sentences

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "data" / "eval" / "audit_pairs.jsonl"


def supported(sentences: list[str], passages, verifier, settings,
              messages: list[dict] | None) -> tuple[bool, float, int]:
    """Every checkable sentence supported? With the judge's seconds and calls."""
    calls = []

    def check(document: str, claim: str) -> bool:
        calls.append(1)
        return verifier.check(document, claim)

    def check_at(number: int, claim: str) -> bool:
        calls.append(1)
        return verifier.check_in_prompt(messages, number, claim)

    t = time.perf_counter()
    verdicts = list(verify_sentences(sentences, passages, check, settings.verify,
                                     check_at=check_at if messages is not None else None))
    return all(v.supported for v in verdicts) and bool(verdicts), time.perf_counter() - t, len(calls)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reader", default="qwen2.5-coder-1.5b")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    settings = load_settings(overrides={"gguf": args.reader})
    runtime = Runtime(settings)
    verifier = runtime.models.verifier()
    if not isinstance(verifier, AnswerJudge):
        sys.exit(f"the verifier ({verifier.name}) is not the reader: only the passage context applies")
    pairs = [json.loads(x) for x in PAIRS.read_text(encoding="utf-8").splitlines() if x.strip()]
    pairs = pairs[:args.limit] if args.limit else pairs
    rows = []
    for i, pair in enumerate(pairs):
        passages = runtime.retrieve(pair["question"], k=settings.answer.k).passages
        messages = build_messages(pair["question"], passages)
        row = {"id": pair["id"], "change": pair["change"]}
        contexts = ("passage", "answer") if i % 2 == 0 else ("answer", "passage")
        for context in contexts:
            for kind in ("faithful", "changed"):
                # untimed, as in an answer: the judge in the answer finds the answer's prompt read
                # (llama.cpp keeps it); the judge of a passage alone finds some other prompt kept
                warm = messages if context == "answer" else [{"role": "user", "content": "."}]
                "".join(runtime.models.reader().stream(warm, max_tokens=1, temperature=0.0))
                text = pair[kind]
                ok, seconds, calls = supported(split_sentences(text), passages, verifier, settings,
                                               messages if context == "answer" else None)
                row[f"{context}_{kind}"] = ok
                row[f"{context}_{kind}_s"] = seconds
                row[f"{context}_{kind}_calls"] = calls
        rows.append(row)
        print(f"# {row['id']:<5} passage {row['passage_faithful']!s:>5}/{row['passage_changed']!s:<5} "
              f"answer {row['answer_faithful']!s:>5}/{row['answer_changed']!s:<5} "
              f"s {row['passage_faithful_s'] + row['passage_changed_s']:5.1f} / "
              f"{row['answer_faithful_s'] + row['answer_changed_s']:5.1f}", flush=True)
    out = {"reader": args.reader, "pairs": len(rows)}
    for context in ("passage", "answer"):
        out[context] = {
            "faithful_supported": sum(r[f"{context}_faithful"] for r in rows),
            "changed_rejected": sum(not r[f"{context}_changed"] for r in rows),
            "both_right": sum(r[f"{context}_faithful"] and not r[f"{context}_changed"] for r in rows),
            # over the answers the judge was asked about (a quoted sentence is supported with no call)
            "median_judge_s": statistics.median([r[f"{context}_{k}_s"] for r in rows for k in ("faithful", "changed")
                                                 if r[f"{context}_{k}_calls"]] or [0.0]),
            "total_judge_s": sum(r[f"{context}_{k}_s"] for r in rows for k in ("faithful", "changed")),
            "calls": sum(r[f"{context}_{k}_calls"] for r in rows for k in ("faithful", "changed")),
        }
    out["agree"] = sum(r[f"passage_{k}"] == r[f"answer_{k}"] for r in rows for k in ("faithful", "changed"))
    if args.json:
        print(json.dumps({**out, "rows": rows}, indent=1))
        return 0
    n = len(rows)
    print(f"\n{n} pairs, reader {args.reader}")
    print(f"{'context':<9}{'faithful supported':>20}{'changed rejected':>18}{'both right':>12}"
          f"{'judge s (median)':>18}{'judge s (all)':>15}{'calls':>7}")
    for context in ("passage", "answer"):
        c = out[context]
        print(f"{context:<9}{c['faithful_supported']:>16}/{n:<3}{c['changed_rejected']:>14}/{n:<3}"
              f"{c['both_right']:>8}/{n:<3}{c['median_judge_s']:>18.2f}{c['total_judge_s']:>15.1f}{c['calls']:>7}")
    print(f"verdicts the same in both contexts: {out['agree']}/{2 * n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

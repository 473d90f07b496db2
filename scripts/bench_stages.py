"""Where an answer's time goes, stage by stage, beside what this machine's reader can do at most.

For dev questions (golden + dev2, answerable; never test unless --set test is given, once, at the
end) each answer runs through the full pipeline with the embedded reader; its stages are read from
the answer itself (`attempts`: prompt tokens, prefill, generation, verification; the retry's
attempt; the retrieval time) and from the verifier's calls (counted by wrapping its `check`).
Beside them, the machine's peak for the same model and threads: a prefill-only run of a
2,000-token corpus prompt and a decode-only run of greedy tokens (scripts/bench_llama_variants.py's
measurement, in a subprocess). Each stage then reads as tokens/s and as a share of that peak; a
verification rate above the prefill peak means llama.cpp reused a prompt prefix it had read.

With --compare KEY=VALUE (e.g. verify.order=sentence) each question is answered twice, with
the setting and without, alternating which goes first, on the same reader and index: per-stage
medians for both arms, and whether the verdicts agree where the drafts are the same.

With --baseline FOLDER (a llama.cpp build that scripts/build_llama.sh filled, e.g. the x86-64-v3
one) the same questions are first answered in a subprocess importing that build, with the
--baseline-setting overrides (what the pipeline was before: e.g. verify.context=passage), and
then here: both tables, and first token and total as ratios of the baseline's medians.

    python scripts/bench_stages.py [--n 8] [--reader qwen2.5-coder-1.5b] [--compare verify.order=sentence]
        [--setting verify.mode=always] [--baseline /tmp/llama-v3 --baseline-setting KEY=VALUE] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_answer import spread  # noqa: E402
from bench_llama_variants import CHILD, corpus_prompt, cpu_flags_line  # noqa: E402

from nistchat.commands.evaluate import parse_overrides  # noqa: E402  -o as `nistchat eval` reads it
from nistchat.config import GGUF_MODELS, load_settings  # noqa: E402
from nistchat.engine.backends.base import AnswerJudge, in_prompt_messages, minicheck_prompt, move_kept_prompt  # noqa: E402
from nistchat.engine.runtime import Runtime  # noqa: E402
from nistchat.engine.text import count_tokens  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SETS = {"dev": ROOT / "data" / "eval" / "golden.jsonl", "dev2": ROOT / "data" / "eval" / "dev_office.jsonl",
        "test": ROOT / "data" / "eval" / "test.jsonl"}


def peak(gguf: Path, threads: int, tokens: int = 2000, decode: int = 64) -> dict:
    """Prefill-only and decode-only speed of the installed llama.cpp build, in its own process."""
    prompt = corpus_prompt(Path("/tmp") / f"bench-stages-{os.getpid()}.txt")
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, str(gguf), prompt, str(tokens), str(decode), str(threads)],
                             capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                 x for x in (os.environ.get("PYTHONPATH"), str(ROOT)) if x)})
    finally:
        os.unlink(prompt)
    if out.returncode != 0:
        sys.exit(out.stderr[-2000:])
    row = json.loads(out.stdout.strip().splitlines()[-1])
    return {"variant": row["variant"], "prefill_tok_s": row["prefill_tokens"] / row["prefill_s"],
            "decode_tok_s": row["decode_tokens"] / row["decode_s"]}


class CountingVerifier:
    """The verifier with its calls counted: how many, the prompt tokens each sends, and the time."""

    def __init__(self, inner):
        self.inner, self.name = inner, getattr(inner, "name", "verifier")
        self.reset()

    def reset(self) -> None:
        self.calls, self.tokens, self.seconds = 0, 0, 0.0

    def check(self, document: str, claim: str) -> bool:
        return self.counted(lambda: self.inner.check(document, claim), minicheck_prompt(document, claim))

    def counted(self, ask, prompt: str) -> bool:
        """One judge call, timed, with the tokens of `prompt` counted as what it reads."""
        t = time.perf_counter()
        try:
            return ask()
        finally:
            self.calls += 1
            self.tokens += count_tokens(prompt)
            self.seconds += time.perf_counter() - t


class CountingAnswerJudge(CountingVerifier):
    """The same for a judge asked inside the answer's prompt (verify.context = "answer"). Its tokens
    are the check's, after the answer's prompt that llama.cpp kept."""

    @property
    def judges_in_prompt(self) -> bool:
        return self.inner.judges_in_prompt

    def check_in_prompt(self, messages: list[dict], number: int, claim: str) -> bool:
        return self.counted(lambda: self.inner.check_in_prompt(messages, number, claim),
                            in_prompt_messages(messages, number, claim)[-1]["content"])


def setting_node(settings, dotted: str) -> tuple[object, str]:
    """The settings section holding a dotted key, and the key's last part."""
    *path, key = dotted.split(".")
    node = settings
    for part in path:
        node = getattr(node, part)
    return node, key


def answer_stages(runtime: Runtime, question: str, counter: CountingVerifier) -> dict:
    """One answer's stages. A one-token call first, untimed, moves llama.cpp's kept prompt away, so
    an answer never starts from the prompt the question's other arm left (it would read nothing)."""
    move_kept_prompt(runtime.models.reader())
    counter.reset()
    start = time.perf_counter()
    final, pieces, first = None, 0, None
    for event in runtime.answer(question, []):
        if event.type == "token":
            pieces += 1
            first = first or time.perf_counter() - start
        elif event.type == "final":
            final = event.answer
        elif event.type == "error":
            return {"error": event.failure.kind}
    total = time.perf_counter() - start
    attempts = final.attempts
    a1 = attempts[0] if attempts else {}
    retry = attempts[1] if len(attempts) > 1 else None
    return {"total_s": total, "first_token_s": first, "refused": final.refused,
            "retrieve_s": (final.timings_ms.get("retrieve") or 0) / 1000,
            "prompt_tokens": a1.get("prompt_tokens", 0), "prefill_s": a1.get("prefill_ms", 0) / 1000,
            "decode_s": max(0.0, (a1.get("generate_ms", 0) - a1.get("prefill_ms", 0)) / 1000),
            "decode_tokens": pieces, "verify_s": sum(a["verify_ms"] for a in attempts) / 1000,
            "verify_calls": counter.calls, "verify_tokens": counter.tokens, "judge_s": counter.seconds,
            "retry_s": (retry["generate_ms"] + retry["verify_ms"]) / 1000 if retry else 0.0,
            "text": a1.get("text", ""), "verdicts": [s["supported"] for s in a1.get("sentences", [])]}


def med(rows: list[dict], key: str) -> float:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else 0.0


def table(rows: list[dict], top: dict) -> list[str]:
    """Per stage: median time, tokens, tokens/s, and the share of the machine's peak."""
    answered = answered_rows(rows)
    verified = [r for r in answered if r["verify_calls"]]
    out = [f"{'stage':<10}{'median s':>10}{'tokens':>8}{'tok/s':>8}{'of peak':>9}"]

    def rate(a: list[dict], tok: str, sec: str) -> float:
        s = sum(r[sec] for r in a)
        return sum(r[tok] for r in a) / s if s else 0.0

    pre, dec = rate(answered, "prompt_tokens", "prefill_s"), rate(answered, "decode_tokens", "decode_s")
    ver = rate(verified, "verify_tokens", "judge_s")
    out.append(f"{'retrieve':<10}{med(answered, 'retrieve_s'):>10.2f}{'':>8}{'':>8}{'':>9}")
    out.append(f"{'prefill':<10}{med(answered, 'prefill_s'):>10.2f}{med(answered, 'prompt_tokens'):>8.0f}"
               f"{pre:>8.1f}{pre / top['prefill_tok_s']:>9.2f}")
    out.append(f"{'decode':<10}{med(answered, 'decode_s'):>10.2f}{med(answered, 'decode_tokens'):>8.0f}"
               f"{dec:>8.1f}{dec / top['decode_tok_s']:>9.2f}")
    out.append(f"{'verify':<10}{med(verified, 'verify_s'):>10.2f}{med(verified, 'verify_tokens'):>8.0f}"
               f"{ver:>8.1f}{ver / top['prefill_tok_s']:>9.2f}   ({len(verified)} verified, "
               f"median {med(verified, 'verify_calls'):.0f} judge calls)")
    out.append(f"{'retry':<10}{med([r for r in answered if r['retry_s']], 'retry_s'):>10.2f}"
               f"   ({sum(1 for r in answered if r['retry_s'])} retried)")
    share = [r["verify_s"] / r["total_s"] for r in verified if r["total_s"]]
    out.append(f"first token median {med(answered, 'first_token_s'):.1f} s, total median {med(answered, 'total_s'):.1f} s"
               f", verification {statistics.median(share) if share else 0:.0%} of total where it ran")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", dest="sets", default="dev,dev2", help="comma-separated: dev, dev2, test")
    ap.add_argument("--n", type=int, default=8, help="questions per set, spread through it")
    ap.add_argument("--reader", default="qwen2.5-coder-1.5b")
    ap.add_argument("--compare", default="", help="KEY=VALUE: answer each question with and without it")
    ap.add_argument("-o", "--setting", action="append", default=[], help="KEY=VALUE for both arms")
    ap.add_argument("--baseline", default="", help="a llama.cpp build folder: the same questions answered with it first")
    ap.add_argument("--baseline-setting", action="append", default=[], help="KEY=VALUE for the baseline only")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    baseline = run_baseline(args) if args.baseline else None
    settings = load_settings(overrides={**parse_overrides(tuple(args.setting)), "gguf": args.reader})
    runtime = Runtime(settings)
    runtime.retrieve("warm-up question about AI risk", k=6)
    judge = runtime.models.verifier()
    counter = (CountingAnswerJudge if isinstance(judge, AnswerJudge) else CountingVerifier)(judge)
    runtime.models._models["verifier"] = counter  # every answer's judge calls pass through the counter
    threads = settings.backends.threads or os.cpu_count() or 2
    gguf = settings.models_dir / GGUF_MODELS[args.reader]
    # the peak before and after the answers, the faster of each: a busy spell lowers one of them
    before = peak(gguf, threads)
    questions = []
    for name in args.sets.split(","):
        rows = [json.loads(x) for x in SETS[name].read_text(encoding="utf-8").splitlines() if x.strip()]
        questions += [(name, r) for r in spread([r for r in rows if r.get("category") != "negative"], args.n)]
    arms = {"default": None}
    if args.compare:  # the arm's value parsed as -o's are; the live settings changed and put back per answer
        key = args.compare.split("=", 1)[0]
        value = parse_overrides((args.compare,))
        for part in key.split("."):
            value = value[part]
        node, leaf = setting_node(runtime.settings, key)
        arms = {"default": None, args.compare: (node, leaf, value, getattr(node, leaf))}
    results: dict[str, list[dict]] = {a: [] for a in arms}
    for i, (set_name, row) in enumerate(questions):
        order = list(arms) if i % 2 == 0 else list(reversed(arms))
        for arm in order:
            change = arms[arm]
            if change:
                setattr(change[0], change[1], change[2])
            try:
                r = answer_stages(runtime, row["question"], counter)
            finally:
                if change:
                    setattr(change[0], change[1], change[3])
            r.update(id=row["id"], set=set_name)
            results[arm].append(r)
            print(f"# {arm:<24} {row['id']:<6} total {r.get('total_s', 0):6.1f} s  verify {r.get('verify_s', 0):5.1f} s"
                  f" ({r.get('verify_calls', 0)} calls)  {r.get('error', '')}", flush=True)
    top = {**before, **{k: max(before[k], v) for k, v in peak(gguf, threads).items() if k != "variant"}}
    print(f"\nCPU flags: {cpu_flags_line()}\nreader {gguf.name}, build {top['variant']}, {threads} threads; "
          f"machine peak: prefill {top['prefill_tok_s']:.1f} tok/s, decode {top['decode_tok_s']:.1f} tok/s "
          f"(token counts of the judge are estimates)")
    for arm, rows in results.items():
        print(f"\n== {arm}: {len(rows)} answers ({args.sets})")
        print("\n".join(table(rows, top)))
    if args.compare:
        a, b = results["default"], results[args.compare]
        same = [(x, y) for x, y in zip(a, b) if "error" not in x and "error" not in y and x["text"] == y["text"]]
        agree = sum(1 for x, y in same if x["verdicts"] == y["verdicts"])
        ratio = [y["verify_s"] / x["verify_s"] for x, y in same if x["verify_s"] > 0.5]
        print(f"\nsame draft in both arms: {len(same)}/{len(a)}; verdicts the same on {agree}/{len(same)}; "
              f"verification time {args.compare} / default: median {statistics.median(ratio) if ratio else 0:.2f}")
    if baseline:
        print(f"\n== baseline: build {baseline['peak']['variant']} ({args.baseline}), "
              f"settings {' '.join(args.baseline_setting) or 'the same'}: {len(baseline['results']['default'])} answers")
        print("\n".join(table(baseline["results"]["default"], baseline["peak"])))
        pairs = answered_in_both(baseline["results"]["default"], results["default"])
        print(f"answered in both (the ratios' questions): {len(pairs)}/{len(results['default'])}")
        for key in ("first_token_s", "total_s"):
            base, now = med([b for b, _ in pairs], key), med([n for _, n in pairs], key)
            each = [b[key] / n[key] for b, n in pairs if b.get(key) and n.get(key)]
            print(f"{key}: baseline {base:.1f} s, now {now:.1f} s: x{base / now if now else 0:.2f} faster"
                  f" (per question: median x{statistics.median(each) if each else 0:.2f})")
    if args.json:
        print(json.dumps({"peak": top, "results": results, "baseline": baseline}, default=str))
    return 0


def answered_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if "error" not in r and not r["refused"]]


def answered_in_both(base: list[dict], now: list[dict]) -> list[tuple[dict, dict]]:
    """The questions answered (not refused, no error) in both runs, paired: a question refused in one
    run only has no time to compare, and a median over different questions is not a ratio."""
    ours = {(r["set"], r["id"]): r for r in answered_rows(now)}
    return [(r, ours[(r["set"], r["id"])]) for r in answered_rows(base) if (r["set"], r["id"]) in ours]


def run_baseline(args) -> dict:
    """This benchmark's default arm on the same questions, in a subprocess importing the baseline build."""
    cmd = [sys.executable, __file__, "--json", "--set", args.sets, "--n", str(args.n), "--reader", args.reader]
    for kv in args.setting + args.baseline_setting:  # the baseline's own overrides come last and win
        cmd += ["-o", kv]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(args.baseline).resolve()), str(ROOT)])}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"baseline run failed: {out.stderr[-2000:]}")
    print("\n".join(line for line in out.stdout.splitlines() if line.startswith("# ")), flush=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    sys.exit(main())

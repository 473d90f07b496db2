"""Prefill and decode speed of the same reader under two (or more) llama.cpp builds, side by side.

Each build is a folder that `scripts/build_llama.sh PYTHON FOLDER` filled (with
NISTCHAT_LLAMA_VARIANT=NAME to pick one); each measurement runs in a fresh subprocess with
PYTHONPATH pointing at that folder, so the builds never share a process. The runs alternate
(v3, v4, v3, v4, ...) so a change of machine load hits both alike. The prompt is the same for all:
about --tokens tokens of the corpus, prefilled in one batch; then --decode greedy tokens.

    NISTCHAT_LLAMA_VARIANT=x86-64-v3 bash scripts/build_llama.sh .venv/bin/python /tmp/llama-v3
    NISTCHAT_LLAMA_VARIANT=x86-64-v4-vnni bash scripts/build_llama.sh .venv/bin/python /tmp/llama-v4
    python scripts/bench_llama_variants.py /tmp/llama-v3 /tmp/llama-v4 [--repeats 3] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs inside each subprocess: argv = gguf, prompt file, prompt tokens, decode tokens, threads,
# and optionally the batch size and 1 for flash attention (the reader's own: 512, off).
CHILD = r"""
import json, sys, time
import llama_cpp
from llama_cpp import Llama
from nistchat.engine.backends.cpu_variant import installed_record
gguf, prompt_file, n_prompt, n_decode, threads = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
batch, flash = (int(sys.argv[6]), sys.argv[7] == "1") if len(sys.argv) > 7 else (512, False)
llm = Llama(model_path=gguf, n_ctx=n_prompt + n_decode + 16, n_threads=threads, n_batch=batch, n_ubatch=batch,
            flash_attn=flash, verbose=False)
tokens = llm.tokenize(open(prompt_file, encoding="utf-8").read().encode(), add_bos=False)[:n_prompt]
llm.eval(tokens[:8]); llm.reset()  # warm the kernels and the page cache outside the timing
t = time.perf_counter(); llm.eval(tokens); prefill = time.perf_counter() - t
out = []
t = time.perf_counter()
for _ in range(n_decode):
    tok = llm.sample(temp=0.0)
    out.append(tok)
    llm.eval([tok])
decode = time.perf_counter() - t
record = installed_record() or {}
print(json.dumps({"variant": record.get("variant", "unrecorded"), "module": llama_cpp.__file__,
                  "prefill_tokens": len(tokens), "prefill_s": prefill, "decode_tokens": n_decode,
                  "decode_s": decode, "output": out,
                  "system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip()}))
"""


def corpus_prompt(path: Path) -> str:
    """A long, fixed stretch of the corpus (the same for every run): about 4 characters a token."""
    corpus = Path(os.environ.get("NISTCHAT_CORPUS_DIR") or ROOT / "data" / "corpus")
    files = sorted(corpus.glob("*.md"))
    if not files:
        sys.exit(f"no corpus markdown under {corpus} (set NISTCHAT_CORPUS_DIR)")
    text = files[0].read_text(encoding="utf-8")[:40_000]
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(build: str, gguf: Path, prompt: str, args) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([build, str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", CHILD, str(gguf), prompt, str(args.tokens), str(args.decode),
                          str(args.threads), str(args.batch), "1" if args.flash_attn else "0"],
                         env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        sys.exit(f"{build}: {out.stderr[-2000:]}")
    row = json.loads(out.stdout.strip().splitlines()[-1])
    if not row["module"].startswith(str(Path(build).resolve())) and not row["module"].startswith(build):
        sys.exit(f"{build}: imported llama_cpp from {row['module']}, not from the build folder")
    return row


def cpu_flags_line() -> str:
    from nistchat.engine.backends.cpu_variant import cpu_flags
    flags = cpu_flags()
    return " ".join(sorted(f for f in flags if f.startswith(("avx512", "amx", "avx_vnni")) or f in ("avx2", "fma")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builds", nargs="+", help="folders filled by scripts/build_llama.sh PYTHON FOLDER")
    parser.add_argument("--gguf", type=Path, default=None, help="a .gguf file (default: --reader's, under the models dir)")
    parser.add_argument("--reader", default="qwen2.5-coder-0.5b", help="a reader name, when no --gguf is given")
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=512, help="n_batch = n_ubatch (the reader's: 512)")
    parser.add_argument("--flash-attn", action="store_true", help="flash attention (the reader's: off)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from nistchat.config import GGUF_MODELS, load_settings
    gguf = args.gguf or load_settings().models_dir / GGUF_MODELS[args.reader]
    prompt = corpus_prompt(Path("/tmp") / f"bench-llama-variants-{os.getpid()}.txt")
    rows: dict[str, list[dict]] = {b: [] for b in args.builds}
    for r in range(args.repeats):
        order = args.builds if r % 2 == 0 else list(reversed(args.builds))  # alternate who goes first
        for build in order:
            rows[build].append(run(build, gguf, prompt, args))
    os.unlink(prompt)
    summary = []
    for build, runs in rows.items():
        summary.append({"build": build, "variant": runs[0]["variant"], "prompt_tokens": runs[0]["prefill_tokens"],
                        "prefill_tok_s": statistics.median(x["prefill_tokens"] / x["prefill_s"] for x in runs),
                        "decode_tok_s": statistics.median(x["decode_tokens"] / x["decode_s"] for x in runs),
                        "prefill_s": [round(x["prefill_s"], 2) for x in runs],
                        "decode_s": [round(x["decode_s"], 2) for x in runs],
                        "same_output_as_first": all(x["output"] == rows[args.builds[0]][0]["output"] for x in runs),
                        "system_info": runs[0]["system_info"]})
    if args.json:
        print(json.dumps({"cpu_flags": cpu_flags_line(), "gguf": gguf.name, "threads": args.threads,
                          "builds": summary}, indent=1))
        return
    print(f"CPU flags: {cpu_flags_line()}\nmodel {gguf.name}, {args.threads} threads, batch {args.batch}, "
          f"flash attention {'on' if args.flash_attn else 'off'}, {args.repeats} runs each, alternating; medians")
    print(f"{'variant':<16} {'prompt':>6} {'prefill tok/s':>14} {'decode tok/s':>13}  same greedy output")
    base = summary[0]
    for s in summary:
        print(f"{s['variant']:<16} {s['prompt_tokens']:>6} {s['prefill_tok_s']:>14.1f} {s['decode_tok_s']:>13.1f}  "
              f"{s['same_output_as_first']}   prefill s {s['prefill_s']}, decode s {s['decode_s']}")
    for s in summary[1:]:
        print(f"{s['variant']} / {base['variant']}: prefill x{s['prefill_tok_s'] / base['prefill_tok_s']:.2f}, "
              f"decode x{s['decode_tok_s'] / base['decode_tok_s']:.2f}")


if __name__ == "__main__":
    main()

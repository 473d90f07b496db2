"""A newcomer's first session: a fresh data directory and database, `nistchat ingest`, then
`nistchat serve`, and five questions through /api/ask while the server builds the second
embedder's vectors in the background; then the same five on the warm, quiet server.

    python scripts/bench_first_run.py                 # make run's readers and second embedder
    python scripts/bench_first_run.py --as-before     # the same, with the behaviour before the fix:
                                                      # no pause of the build, one 120 s stall limit
                                                      # for the first token, no small talk

The five are one conversation as a newcomer types it: a list question, a follow-up to it, a
situation question, a greeting and a question about the documents. It prints, per question, the
outcome (answered, refused, small talk or the error kind) and seconds, during the build and
quiet, with their ratio; the build's time and pauses; and the CPU's flags. One JSON line last.
Everything runs on loopback; the temporary folder is removed unless --keep.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
NISTCHAT = Path(sys.executable).with_name("nistchat")
QUESTIONS = [  # written for this benchmark, in a newcomer's words; none is from an evaluation set
    "what are the main functions in the ai rmf and what does each one do?",
    "which of those is supposed to happen all the time, across the others?",
    "we want to use a generative model to draft customer letters - what risks should we plan for?",
    "hello!",
    "what documents do you cover?",
]
AS_BEFORE = """
[background]
yield_to_answers = false
[small_talk]
enabled = false
[backends]
first_token_floor_s = 120.0
first_token_ceiling_s = 120.0
"""


def cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return "?"
    wanted = ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni", "amx_tile")
    have = set(flags.split(":", 1)[1].split())
    return " ".join(f for f in wanted if f in have) + f" ({os.cpu_count()} cores)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ask(client: httpx.Client, question: str, conversation: str | None) -> dict:
    """One question through /api/ask: outcome, seconds to the final/error event, first token."""
    start = time.perf_counter()
    first = None
    outcome, detail, conv = "no result", "", conversation
    body = {"question": question, **({"conversation_id": conversation} if conversation else {})}
    with client.stream("POST", "/api/ask", json=body, timeout=httpx.Timeout(10.0, read=1200.0)) as response:
        if response.status_code != 200:
            return {"question": question, "outcome": f"HTTP {response.status_code}", "s": 0.0}
        for line in response.iter_lines():
            if not line.strip():
                continue
            event = json.loads(line)
            kind = event.get("type")
            if kind == "accepted":
                conv = event["conversation_id"]
            elif kind == "token" and first is None:
                first = time.perf_counter() - start
            elif kind == "final":
                outcome = ("small talk" if event.get("small_talk") and not event.get("refused")
                           else "refused" if event.get("refused") else "answered")
                detail = event.get("refusal_reason") or event.get("small_talk") or ""
            elif kind == "error":
                outcome, detail = f"error: {event.get('kind')}", event.get("message", "")[:100]
            elif kind == "stored":
                break
    return {"question": question, "outcome": outcome, "detail": detail, "s": round(time.perf_counter() - start, 1),
            "first_token_s": round(first, 1) if first is not None else None, "conversation": conv}


def session(base: str) -> list[dict]:
    with httpx.Client(base_url=base) as client:  # one browser: its cookie keeps the conversation
        conversation, results = None, []
        for q in QUESTIONS:
            result = ask(client, q, conversation)
            conversation = result.pop("conversation") or conversation
            results.append(result)
            print(f"    {result['outcome']:>12} {result['s']:7.1f} s  {q}", flush=True)
        return results


def progress(index_dir: Path) -> dict:
    try:
        return json.loads((index_dir / "dense2.progress.json").read_text())
    except (OSError, ValueError):
        return {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reader", default="qwen2.5-coder-1.5b")
    ap.add_argument("--second", default="embeddinggemma-300m")
    ap.add_argument("--models-dir", type=Path, default=ROOT / "data" / "models")
    ap.add_argument("--as-before", action="store_true", help="the behaviour before the first-run fixes")
    ap.add_argument("--build-timeout", type=float, default=3600.0)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="nistchat-first-run-"))
    env = {**os.environ, "NISTCHAT_DATA_DIR": str(work / "data"), "NISTCHAT_INSTANCE_DIR": str(work / "instance"),
           "NISTCHAT_MODELS_DIR": str(args.models_dir.resolve()), "NISTCHAT_GGUF": args.reader,
           "NISTCHAT_SECOND_EMBEDDER": args.second, "NISTCHAT_BACKEND": "embedded", "PYTHONUNBUFFERED": "1"}
    (work / "instance").mkdir(parents=True)
    if args.as_before:
        (work / "instance" / "config.toml").write_text(AS_BEFORE, encoding="utf-8")
    port = free_port()
    server = None
    try:
        t = time.perf_counter()
        subprocess.run([str(NISTCHAT), "ingest"], env=env, check=True, stdout=subprocess.DEVNULL)
        ingest_s = time.perf_counter() - t
        log = open(work / "serve.log", "w")
        server = subprocess.Popen([str(NISTCHAT), "serve", "--host", "127.0.0.1", "--port", str(port)], env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/status", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        index_dir = work / "data" / "index"
        while progress(index_dir).get("state") != "building" and time.monotonic() < deadline:
            time.sleep(0.5)  # the build starts after the self-test and warm-up, as in `make run`
        print(f"first run ({'as before' if args.as_before else 'now'}), reader {args.reader}, "
              f"CPU: {cpu_flags()}\n  during the build:", flush=True)
        busy = session(base)
        during = progress(index_dir)
        build_deadline = time.monotonic() + args.build_timeout
        while progress(index_dir).get("state") == "building" and time.monotonic() < build_deadline:
            time.sleep(2)
        built = progress(index_dir)
        print(f"  build: {built.get('state')} {built.get('done')}/{built.get('total')} in {built.get('seconds')} s "
              f"(paused {built.get('paused_s', 0)} s; {during.get('done')} done when the five were answered)")
        print("  quiet, warm server:", flush=True)
        quiet = session(base)
        rows = []
        for b, q in zip(busy, quiet):
            ratio = round(b["s"] / q["s"], 2) if q["s"] >= 0.5 else None  # small talk: both under 0.5 s
            rows.append({"question": b["question"], "during": b, "quiet": q, "ratio": ratio})
            shown = f"{ratio}x" if ratio is not None else "- (both under 0.5 s)" if b["s"] < 0.5 else "-"
            print(f"    ratio {shown}: {b['outcome']} {b['s']} s vs {q['outcome']} {q['s']} s")
        ok = sum(1 for r in rows if not r["during"]["outcome"].startswith(("error", "HTTP", "no result")))
        print(json.dumps({"as_before": args.as_before, "reader": args.reader, "cpu": cpu_flags(),
                          "ingest_s": round(ingest_s, 1), "answered_during_build": ok, "rows": rows,
                          "build": built}))
        return 0
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

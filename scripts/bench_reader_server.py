"""The reader on an OpenAI-compatible server, side by side in one run: N questions asked at once
through /api/ask of a live site (waitress on loopback), with

  - server, 1 slot:  backend = "openai" against llama.cpp's `llama-server --parallel 4`
                     (scripts/build_llama_server.sh), queue.reader_slots 1
  - server, 4 slots: the same server, queue.reader_slots 4
  - embedded:        the default reader worker process, one slot (what the HTTP hop is compared to)

For each: time to first token and total per question (from the moment all were sent), answers per
minute over the wall time, what was stored (every question accepted must be stored, none left
pending), and the server's own figures from its /metrics (`--metrics`): prompt and generation
tokens per second per sequence, generated tokens per second of wall time, and how many slots
each decode step carried on average (batching). A fresh server for each server mode, so the
second does not start with the first's prompt cache. `--server llama_cpp.server` runs the same
against `python -m llama_cpp.server` instead (one generation at a time: no parallel slots).

    python scripts/bench_reader_server.py [--n 8] [--reader qwen2.5-coder-0.5b] [--max-tokens 0]
                                          [--set answer.context_tokens=600] [--server llama-server]
                                          [--modes server-1,server-4,embedded] [--json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_answer import spread  # noqa: E402  the same questions the answer benchmark picks

MODES = ("server-1", "server-4", "embedded")


def ask(base: str, question: str, sent_at: float, out: dict) -> None:
    """One browser: POST /api/ask and read the NDJSON stream to its end."""
    out.update(first_token_s=None, total_s=None, kind="none")
    with httpx.Client(base_url=base, timeout=1800) as client:
        with client.stream("POST", "/api/ask", json={"question": question}) as response:
            out["status"] = response.status_code
            for line in response.iter_lines():
                if not line.strip():
                    continue
                event = json.loads(line)
                if event["type"] == "token" and out["first_token_s"] is None:
                    out["first_token_s"] = time.perf_counter() - sent_at
                elif event["type"] in ("final", "error"):
                    out["kind"] = "final" if event["type"] == "final" else f"error:{event.get('kind')}"
                    out["total_s"] = time.perf_counter() - sent_at
                    out["chars"] = len(event.get("answer") or event.get("partial") or "")


def server_figures(before: dict, after: dict, wall_s: float) -> dict:
    """llama-server's own throughput over one mode, from the differences of its /metrics totals."""
    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    def rate(tokens: float, seconds: float):
        return round(tokens / seconds, 2) if seconds > 0 else None

    busy = (after.get("n_busy_slots_per_decode", 0.0) * after.get("n_decode_total", 0.0)
            - before.get("n_busy_slots_per_decode", 0.0) * before.get("n_decode_total", 0.0))
    return {"prompt_tokens": int(delta("prompt_tokens_total")),
            "prompt_tokens_per_s_per_sequence": rate(delta("prompt_tokens_total"), delta("prompt_seconds_total")),
            "generated_tokens": int(delta("tokens_predicted_total")),
            "generated_tokens_per_s_per_sequence": rate(delta("tokens_predicted_total"),
                                                        delta("tokens_predicted_seconds_total")),
            "generated_tokens_per_s_of_wall": rate(delta("tokens_predicted_total"), wall_s),
            "busy_slots_per_decode": round(busy / delta("n_decode_total"), 2) if delta("n_decode_total") else None}


def run_mode(mode: str, questions: list[str], server, reader: str, tmp: Path, max_tokens: int | None,
             extra: dict) -> dict:
    from waitress import create_server

    from nistchat.app import create_app, upgrade_database
    from nistchat.config import load_settings
    from nistchat.engine.runtime import Runtime
    from nistchat.extensions import db
    from nistchat.models import Message

    # timeout_s: with more slots than the server runs at once, a request waits at the server without
    # a token; the long limit lets that mode finish, so it is measured instead of timing out
    overrides = {"secret_key": "bench", "ask_rate_limit": "100000 per minute", "max_waiting": 1000,
                 "max_waiting_per_browser": 1000, "gguf": reader, "timeout_s": 900.0, **extra}
    if max_tokens:
        overrides["answer.max_tokens"] = max_tokens
    if mode.startswith("server"):
        from tests.openai_server import MODEL_ALIAS

        key_file = tmp / "api_key"
        key_file.write_text(server.api_key, encoding="utf-8")
        overrides.update(backend="openai", openai_base_url=server.base_url, openai_model=MODEL_ALIAS,
                         openai_api_key_file=str(key_file), reader_slots=int(mode.split("-")[1]))
    else:
        overrides.update(backend="embedded", reader_slots=1)
    settings = load_settings(instance_dir=tmp / mode, overrides=overrides)
    runtime = Runtime(settings)
    app = create_app({"SETTINGS": settings, "RUNTIME": runtime})
    upgrade_database(app)
    runtime.models.self_test()  # what `nistchat serve` does at start: load the models and search once
    runtime.retrieve("warm-up: how are AI risks managed?")
    metrics_before = server.metrics() if mode.startswith("server") and hasattr(server, "metrics") else None
    web = create_server(app, host="127.0.0.1", port=0, threads=len(questions) + 8, channel_timeout=1800)
    threading.Thread(target=web.run, daemon=True).start()
    base = f"http://127.0.0.1:{web.effective_port}"
    results = [{} for _ in questions]
    start = time.perf_counter()
    threads = [threading.Thread(target=ask, args=(base, q, start, r)) for q, r in zip(questions, results)]
    for t in threads:
        t.start()
    peak = 0
    while any(t.is_alive() for t in threads):
        peak = max(peak, runtime.queue.snapshot()["serving"])
        time.sleep(0.05)
    wall = time.perf_counter() - start
    from nistchat.chat.runs import registry
    until = time.monotonic() + 60
    while registry(app).active() and time.monotonic() < until:
        time.sleep(0.1)
    web.close()
    with app.app_context():
        stored = db.session.query(Message).count()
        pending = db.session.query(Message).filter(Message.status == "pending").count()
    worker = runtime.models.worker()
    if worker:
        worker.stop()
    answered = [r for r in results if r.get("kind") == "final"]

    def med(key: str):
        values = [r[key] for r in answered if r.get(key) is not None]
        return round(statistics.median(values), 2) if values else None

    return {"mode": mode, "questions": len(questions), "answered": len(answered),
            "errors": [r.get("kind") for r in results if r.get("kind") != "final"],
            "first_token_median_s": med("first_token_s"), "total_median_s": med("total_s"),
            "first_token_s": [round(r["first_token_s"], 2) if r.get("first_token_s") else None for r in results],
            "total_s": [round(r["total_s"], 2) if r.get("total_s") else None for r in results],
            "wall_s": round(wall, 1), "answers_per_minute": round(len(answered) / wall * 60, 2),
            "peak_serving": peak, "stored": stored, "pending": pending,
            "server": server_figures(metrics_before, server.metrics(), wall) if metrics_before is not None else None}


def parse_setting(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=8, help="questions asked at once")
    parser.add_argument("--reader", default="qwen2.5-coder-0.5b", help="the GGUF both the server and the worker load")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--server", default="llama-server", choices=("llama-server", "llama_cpp.server"))
    parser.add_argument("--parallel", type=int, default=4, help="llama-server's --parallel slots")
    parser.add_argument("--threads", type=int, default=0, help="llama.cpp threads for the server (0: all cores)")
    parser.add_argument("--max-tokens", type=int, default=0, help="longest answer (0: the configured answer.max_tokens)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for every mode, e.g. answer.context_tokens=600 (repeatable)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode {unknown[0]!r}; choose from {', '.join(MODES)}")
    extra = dict(parse_setting(text) for text in args.set)

    import os

    from nistchat.config import load_settings
    from tests.openai_server import make_server

    rows = [json.loads(line) for line in (ROOT / "data" / "eval" / "golden.jsonl").read_text().splitlines()
            if line.strip()]
    questions = [r["question"] for r in spread([r for r in rows if r["category"] != "negative"], args.n)]
    gguf = load_settings(overrides={"gguf": args.reader}).gguf_path
    threads = args.threads or os.cpu_count() or 2
    print(f"# {args.n} questions at once; reader {args.reader}; server {args.server}"
          f"{f' --parallel {args.parallel}' if args.server == 'llama-server' else ''}, {threads} threads; "
          f"settings {extra or 'as configured'}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
          flush=True)
    reports = []
    with tempfile.TemporaryDirectory(prefix="nistchat-bench-server-") as tmp:
        for mode in modes:
            server = None
            if mode.startswith("server"):  # a fresh server each time: no prompt cache from the mode before
                server = make_server(args.server, gguf, Path(tmp) / f"{mode}.log", n_ctx=4096, threads=threads,
                                     parallel=args.parallel)
                t = time.perf_counter()
                server.start()
                print(f"# {server.kind} on {server.base_url} ready in {time.perf_counter() - t:.1f} s (not counted)",
                      flush=True)
            try:
                report = run_mode(mode, questions, server, args.reader, Path(tmp), args.max_tokens, extra)
            finally:
                if server:
                    server.stop()
            report["load_average_after"] = round(os.getloadavg()[0], 2)
            reports.append(report)
            if not args.json:
                print(f"{mode:>9}: {report['answered']}/{report['questions']} answered in {report['wall_s']} s "
                      f"= {report['answers_per_minute']} answers/min; first token median "
                      f"{report['first_token_median_s']} s, total median {report['total_median_s']} s; "
                      f"peak {report['peak_serving']} serving; stored {report['stored']}, pending "
                      f"{report['pending']}; errors {report['errors']}; load {report['load_average_after']}",
                      flush=True)
                print(f"           first token s: {report['first_token_s']}\n           total s: {report['total_s']}",
                      flush=True)
                if report.get("server"):
                    print(f"           server: {report['server']}", flush=True)
    by_mode = {r["mode"]: r for r in reports}
    ratios = {}
    if "server-1" in by_mode and "server-4" in by_mode and by_mode["server-1"]["answers_per_minute"]:
        ratios["server_4_vs_1_answers_per_minute"] = round(
            by_mode["server-4"]["answers_per_minute"] / by_mode["server-1"]["answers_per_minute"], 3)
    if "server-1" in by_mode and "embedded" in by_mode and by_mode["embedded"]["answers_per_minute"]:
        ratios["server_1_vs_embedded_answers_per_minute"] = round(
            by_mode["server-1"]["answers_per_minute"] / by_mode["embedded"]["answers_per_minute"], 3)
    out = {"reader": args.reader, "questions": args.n, "max_tokens": args.max_tokens or "configured",
           "server": args.server, "parallel": args.parallel, "settings": extra,
           "server_threads": threads, "modes": reports, "ratios": ratios}
    print(json.dumps(out, indent=2) if args.json else f"ratios: {ratios}")
    lost = [r["mode"] for r in reports if r["stored"] != r["questions"] or r["pending"]]
    if lost:
        print(f"!! not every question was stored, or some are pending: {lost}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Load benchmark: N browser-like clients against a live waitress server on loopback, loading
pages and searching history while a few answers stream, for a fixed time.

    python scripts/bench_load.py                    # 20 clients, 2 minutes, 3 real answers streaming
    python scripts/bench_load.py --light --seconds 20   # the smoke version (tests/test_bench_load.py)

--light serves an engine without an index: the streaming answers are direct-answer topics and
questions that fail fast with "no index", so no model is loaded. Either way it reports, as one
JSON line, and exits 1 when a limit is broken:
  - 5xx responses (limit 0) and lost messages: questions accepted minus rows stored (limit 0);
  - the p95 of history searches while answers stream (limit --max-search-p95-ms, 200);
  - resident memory at the end against after warm-up (limit --max-rss-growth, 10 %).
Loopback only; every loop is bounded by the deadline and by --max-requests per client.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SEARCHES = ["risk", "govern", "map", "measure", "manage", "profile", "generative", "adversarial", "attack",
            "privacy", "bias", "documents", "confabulation", "monitoring", "secure"]
PAGES = ["/", "/history", "/status", "/history?page=2"]
DIRECT_LABEL = "Which documents can I ask about?"  # a {label, answer} topic in the default config
REAL_QUESTIONS = ["What are the four functions of the AI RMF Core?", "What is confabulation?",
                  "What does TEVV stand for?", "What is data poisoning?"]


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def p95(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = self.server_errors = self.accepted = self.asks = 0
        self.search_ms: list[float] = []
        self.errors: list[str] = []

    def add(self, status: int, what: str, search_ms: float | None = None) -> None:
        with self.lock:
            self.requests += 1
            if status >= 500:
                self.server_errors += 1
                if len(self.errors) < 10:
                    self.errors.append(f"{status} {what}")
            if search_ms is not None:
                self.search_ms.append(search_ms)


def browse(base: str, deadline: float, tally: Tally, streaming: threading.Event, max_requests: int, seed: int):
    """One browser: pages and history searches until the deadline (or max_requests)."""
    rng = random.Random(seed)
    with httpx.Client(base_url=base, timeout=60) as client:
        for _ in range(max_requests):
            if time.monotonic() >= deadline:
                return
            if rng.random() < 0.5:
                url = f"/history?q={rng.choice(SEARCHES)}"
                start = time.perf_counter()
                response = client.get(url, headers={"HX-Request": "true", "HX-Target": "results"})
                ms = (time.perf_counter() - start) * 1000
                tally.add(response.status_code, url, ms if streaming.is_set() else None)
            else:
                url = rng.choice(PAGES)
                tally.add(client.get(url).status_code, url)


def stream_answers(base: str, deadline: float, tally: Tally, light: bool, max_requests: int, seed: int,
                   pause_s: float = 0.0):
    """One browser asking question after question through the API, reading each stream to its end
    and then reading the answer for `pause_s` (a person, not a script: a direct answer arrives at
    once, and finished runs are kept for reconnects for 5 minutes)."""
    rng = random.Random(seed)
    with httpx.Client(base_url=base, timeout=600) as client:
        for _ in range(max_requests):
            if time.monotonic() >= deadline:
                return
            if light:
                body = rng.choice([{"question": DIRECT_LABEL, "topic": True}, {"question": rng.choice(REAL_QUESTIONS)}])
            else:
                body = {"question": rng.choice(REAL_QUESTIONS)}
            with tally.lock:
                tally.asks += 1
            with client.stream("POST", "/api/ask", json=body) as response:
                status = response.status_code
                lines = [json.loads(line) for line in response.iter_lines() if line.strip()]
            tally.add(status, "POST /api/ask")
            if status == 200 and lines and lines[0].get("type") == "accepted":
                with tally.lock:
                    tally.accepted += 1
            time.sleep(min(pause_s, max(0.0, deadline - time.monotonic())))


def run(args) -> dict:
    from waitress import create_server

    from nistchat.app import create_app, upgrade_database
    from nistchat.config import load_settings
    from nistchat.engine.runtime import Runtime
    from nistchat.extensions import db
    from nistchat.models import Message

    with tempfile.TemporaryDirectory(prefix="nistchat-bench-load-") as tmp:
        overrides = {"secret_key": "bench", "ask_rate_limit": "100000 per minute", "max_waiting": 1000,
                     "max_waiting_per_browser": 1000}
        if args.light:
            overrides["data_dir"] = Path(tmp) / "no-index"
        settings = load_settings(instance_dir=Path(tmp) / "instance", overrides=overrides)
        runtime = Runtime(settings)
        app = create_app({"SETTINGS": settings, "RUNTIME": runtime})
        upgrade_database(app)
        if not args.light:  # what `nistchat serve` does at start: load the models and search once
            runtime.models.self_test()
            runtime.retrieve("warm-up: how are AI risks managed?")
        server = create_server(app, host="127.0.0.1", port=0, threads=args.clients + args.streams + 8,
                               channel_timeout=900)
        threading.Thread(target=server.run, name="bench-server", daemon=True).start()
        base = f"http://127.0.0.1:{server.effective_port}"
        tally = Tally()
        streaming = threading.Event()

        warmup_end = time.monotonic() + max(2.0, args.seconds * 0.15)
        deadline = time.monotonic() + args.seconds
        threads = [threading.Thread(target=browse, args=(base, deadline, tally, streaming, args.max_requests, i))
                   for i in range(args.clients)]
        threads += [threading.Thread(target=stream_answers,
                                     args=(base, deadline, tally, args.light, args.max_requests, 1000 + i,
                                           args.ask_pause_s))
                    for i in range(args.streams)]
        for thread in threads:
            thread.start()
        while time.monotonic() < warmup_end:
            time.sleep(0.1)
        streaming.set()  # searches timed from here: the answers have started
        rss_warm = rss_bytes()
        for thread in threads:
            thread.join(timeout=args.seconds + 900)
        rss_end = rss_bytes()
        from nistchat.chat.runs import registry
        deadline_runs = time.monotonic() + 60  # answers still finishing write their rows first
        while registry(app).active() and time.monotonic() < deadline_runs:
            time.sleep(0.1)
        time.sleep(0.5)  # let waitress flush the last responses before its sockets close
        server.close()
        with app.app_context():
            stored = db.session.query(Message).count()
            unfinished = db.session.query(Message).filter(Message.status == "pending").count()
    growth = (rss_end - rss_warm) / rss_warm if rss_warm else 0.0
    return {"clients": args.clients, "streams": args.streams, "ask_pause_s": args.ask_pause_s, "seconds": args.seconds, "light": args.light,
            "requests": tally.requests, "server_errors": tally.server_errors, "error_samples": tally.errors,
            "asks": tally.asks, "accepted": tally.accepted, "stored": stored, "lost": tally.accepted - stored,
            "pending_at_end": unfinished, "searches_timed": len(tally.search_ms),
            "search_p95_ms": round(p95(tally.search_ms), 1),
            "rss_warm_mb": round(rss_warm / 2**20, 1), "rss_end_mb": round(rss_end / 2**20, 1),
            "rss_growth": round(growth, 3)}


def failures(result: dict, args) -> list[str]:
    problems = []
    if result["server_errors"]:
        problems.append(f"{result['server_errors']} responses were 5xx: {result['error_samples']}")
    if result["lost"]:
        problems.append(f"{result['lost']} accepted questions were not stored")
    if result["search_p95_ms"] > args.max_search_p95_ms:
        problems.append(f"history-search p95 {result['search_p95_ms']} ms > {args.max_search_p95_ms} ms")
    if result["rss_growth"] > args.max_rss_growth:
        problems.append(f"RSS grew {result['rss_growth']:.1%} after warm-up (limit {args.max_rss_growth:.0%})")
    return problems


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--streams", type=int, default=3, help="answers streaming at once (2-4)")
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--ask-pause-s", type=float, default=2.0, help="a streaming client reads its answer this long")
    parser.add_argument("--max-requests", type=int, default=100_000, help="bound on each client's loop")
    parser.add_argument("--light", action="store_true", help="no index and no model (the smoke version)")
    parser.add_argument("--max-search-p95-ms", type=float, default=200.0)
    parser.add_argument("--max-rss-growth", type=float, default=0.10)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    result = run(args)
    problems = failures(result, args)
    print(json.dumps({"bench": "load", **result, "ok": not problems}))
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

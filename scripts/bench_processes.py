"""Several web processes behind nginx: N `nistchat serve` processes on one PostgreSQL and one reader
server (llama_cpp.server on the 0.5B weights), nginx in front with the configuration of
docs/deployment.md (round robin), and browser-like clients asking real questions through it for a
fixed time.

    python scripts/bench_processes.py --processes 2      # the scale-out shape: 20 clients, 60 s
    python scripts/bench_processes.py --processes 1      # the same load on one process

Every client is a browser of its own (its own session and loopback address, so its own rate
limit behind `proxy_count = 1`): it loads pages, searches History, asks topic questions and small
talk, with a pause between; `--real-questions` of them ask one real question (retrieval and the
reader) at a random moment, and every tenth asks three at once: the per-browser cap (2 waiting)
must refuse the third whichever process it lands on. Each answer's stream is followed to its end
(nginx sends the stream request to either process). The reader serves one answer at a time, so
the real questions wait in line; their number, not the minute, sets how long the run takes.
A sampler reads the ticket table meanwhile: never more answers using the reader than its slots, never more
waiting than the caps, anywhere. After the time is up the clients finish the answers they wait
for. Reports one JSON line; exits 1 when a limit is broken:
  - 5xx responses or failed connections (limit 0);
  - accepted questions not stored exactly once, each run once (lost 0);
  - the caps exceeded in the ticket table, or no per-browser refusal seen;
  - History (the list and a search) differing between the processes, asked of each directly.
Needs PostgreSQL's server programs, nginx, openssl, llama-cpp-python's server extra, the 0.5B
reader and an index (`--data-dir`; `nistchat ingest` builds data/index).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_load import DIRECT_LABEL, REAL_QUESTIONS, SEARCHES, p95  # noqa: E402

SMALL_TALK = ["hello!", "thanks, that helps"]
PAGES = ["/", "/history", "/status"]
MID = re.compile(r'data-message-id="(\d+)"')
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
CONVERSATION = re.compile(r'href="(/c/[0-9a-f]{32}[^"]*)"')  # a conversation, or a hit in one


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = self.server_errors = self.asks = 0
        self.refused = {"browser": 0, "server": 0, "rate": 0}
        self.accepted: list[int] = []
        self.search_ms: list[float] = []
        self.answer_s: list[float] = []
        self.streams = self.streams_with_tokens = 0
        self.errors: list[str] = []

    def add(self, status: int, what: str) -> None:
        with self.lock:
            self.requests += 1
            if status >= 500 or status == 0:
                self.server_errors += 1
                if len(self.errors) < 10:
                    self.errors.append(f"{status} {what}")


class Browser:
    """One person's browser: a session cookie, a CSRF token, its own source address."""

    def __init__(self, i: int, base: str, host: str, tally: Tally, seed: int):
        self.i, self.tally, self.rng = i, tally, random.Random(seed)
        transport = httpx.HTTPTransport(local_address=f"127.0.0.{10 + i}", verify=False)
        port = base.rsplit(":", 1)[-1]  # nginx forwards its port: the site is https://host:port here
        self.client = httpx.Client(base_url=base, transport=transport, timeout=900,
                                   headers={"Host": host, "Referer": f"https://{host}:{port}/"})
        self.token = ""

    def get(self, url: str, **kwargs) -> httpx.Response | None:
        try:
            response = self.client.get(url, **kwargs)
        except httpx.HTTPError as exc:
            self.tally.add(0, f"GET {url}: {type(exc).__name__}")
            return None
        self.tally.add(response.status_code, f"GET {url}")
        return response

    def open(self) -> None:
        page = self.get("/")
        self.token = CSRF.search(page.text).group(1) if page is not None and page.status_code == 200 else ""

    def ask(self, question: str, topic: bool = False) -> None:
        """POST /ask as the page does (htmx), then the answer's stream to its end."""
        with self.tally.lock:
            self.tally.asks += 1
        data = {"question": question, "csrf_token": self.token, **({"topic": "1"} if topic else {})}
        start = time.monotonic()
        try:
            response = self.client.post("/ask", data=data, headers={"HX-Request": "true"})
        except httpx.HTTPError as exc:
            self.tally.add(0, f"POST /ask: {type(exc).__name__}")
            return
        self.tally.add(response.status_code, "POST /ask")
        if response.status_code in (429, 503):
            scope = "server" if response.status_code == 503 else (
                "browser" if "questions waiting" in response.text else "rate")
            with self.tally.lock:
                self.tally.refused[scope] += 1
            return
        if response.status_code != 200:
            return
        mid = int(MID.search(response.text).group(1))
        with self.tally.lock:
            self.tally.accepted.append(mid)
        self.follow(mid, start)

    def follow(self, mid: int, start: float) -> None:
        body = ""
        for _attempt in range(3):  # EventSource reconnects; a stream cut short is asked again
            try:
                with self.client.stream("GET", f"/ask/stream/{mid}") as stream:
                    status = stream.status_code
                    body = "".join(stream.iter_text())
            except httpx.HTTPError as exc:
                self.tally.add(0, f"GET /ask/stream: {type(exc).__name__}")
                continue
            self.tally.add(status, "GET /ask/stream")
            if "event: done" in body:
                break
        with self.tally.lock:
            self.tally.streams += 1
            self.tally.streams_with_tokens += "event: token" in body
            self.tally.answer_s.append(time.monotonic() - start)

    def search(self) -> None:
        url = f"/history?q={self.rng.choice(SEARCHES)}"
        start = time.perf_counter()
        if self.get(url, headers={"HX-Request": "true", "HX-Target": "results"}) is not None:
            with self.tally.lock:
                self.tally.search_ms.append((time.perf_counter() - start) * 1000)

    def burst(self) -> None:
        """Three questions at once: two may wait, the third is refused wherever it lands."""
        threads = [threading.Thread(target=self.ask, args=(self.rng.choice(REAL_QUESTIONS),)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def run(self, deadline: float, real: bool, impatient: bool, think_s: float, seconds: float) -> None:
        """Pages, searches, topic answers and small talk until the deadline; at a random moment
        in the first 60 %, one real question (`real`) or three at once (`impatient`)."""
        self.open()
        ask_at = time.monotonic() + self.rng.uniform(0, 0.6 * seconds) if real or impatient else None
        while time.monotonic() < deadline:
            if ask_at is not None and time.monotonic() >= ask_at:
                ask_at = None
                self.burst() if impatient else self.ask(self.rng.choice(REAL_QUESTIONS))
                continue
            roll = self.rng.random()
            if roll < 0.1:
                self.ask(DIRECT_LABEL, topic=True)
            elif roll < 0.15:
                self.ask(self.rng.choice(SMALL_TALK))
            elif roll < 0.6:
                self.search()
            else:
                self.get(self.rng.choice(PAGES))
            time.sleep(min(self.rng.uniform(0.5, 2 * think_s), max(0.0, deadline - time.monotonic())))


class CapSampler(threading.Thread):
    """The ticket table every 0.2 s: the most serving, waiting and waiting for one browser at once."""

    def __init__(self, url: str):
        super().__init__(name="cap-sampler", daemon=True)
        from sqlalchemy import create_engine

        self.engine = create_engine(url)
        self.stop = threading.Event()
        self.max_serving = self.max_waiting = self.max_waiting_per_browser = self.samples = 0

    def run(self) -> None:
        from sqlalchemy import text

        while not self.stop.wait(0.2):
            with self.engine.connect() as conn:
                rows = conn.execute(text("SELECT state, owner, priority FROM reader_ticket "
                                         "WHERE lease_until >= :now"), {"now": time.time()}).all()
            waiting = [owner for state, owner, priority in rows if state == "waiting" and priority == 0]
            per_owner = max((waiting.count(o) for o in set(waiting) if o), default=0)
            self.samples += 1
            self.max_serving = max(self.max_serving, sum(1 for state, _o, _p in rows if state != "waiting"))
            self.max_waiting = max(self.max_waiting, len(waiting))
            self.max_waiting_per_browser = max(self.max_waiting_per_browser, per_owner)


def write_config(instance: Path, args, database_url: str, reader_url: str) -> None:
    from tests.openai_server import MODEL_ALIAS
    from tests.nginx_site import HOST

    instance.mkdir(parents=True, exist_ok=True)
    (instance / "config.toml").write_text(f"""
database_url = "{database_url}"
data_dir = "{Path(args.data_dir).resolve()}"
models_root = "{Path(args.models_dir).resolve()}"

[backends]
backend = "openai"
openai_base_url = "{reader_url}"
openai_model = "{MODEL_ALIAS}"

[retrieval]
second_embedder = ""

[answer]
max_tokens = {args.max_tokens}
context_tokens = {args.context_tokens}

[verify]
mode = "never"

[queue]
max_waiting = {args.max_waiting}
max_waiting_per_browser = 2
reader_slots = 1
shared = "database"

[web]
allowed_hosts = ["{HOST}"]
proxy_count = 1
session_cookie_secure = true
secret_key = "bench-processes"
""", encoding="utf-8")


def start_serves(args, instance: Path, env: dict, logs: Path) -> tuple[list[subprocess.Popen], list[int]]:
    from tests.postgres_server import free_port

    cli = [sys.executable, "-m", "nistchat.cli"]
    done = subprocess.run(cli + ["db", "upgrade"], env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:  # one process migrates first, as docs/deployment.md says
        raise RuntimeError(f"db upgrade failed: {done.stdout[-1000:]} {done.stderr[-2000:]}")
    ports = [free_port() for _ in range(args.processes)]
    serves = []
    for n, port in enumerate(ports):
        log = open(logs / f"serve-{n}.log", "wb")
        serves.append(subprocess.Popen(cli + ["serve", "--host", "127.0.0.1", "--port", str(port),
                                              "--threads", str(args.clients * 2 + 16)],
                                       env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + 600
    for n, serve in enumerate(serves):  # ready once its warm-up searched the index
        while "warm-up:" not in (logs / f"serve-{n}.log").read_text(errors="replace"):
            if serve.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve {n} did not warm up: {(logs / f'serve-{n}.log').read_text()[-3000:]}")
            time.sleep(0.5)
    return serves, ports


def history_views(ports: list[int], cookies: list[str], host: str) -> list[list]:
    """Per process, asked directly: each browser's History list and one search, as ids."""
    views = []
    for port in ports:
        view = []
        for cookie in cookies:
            headers = {"Host": host, "Cookie": f"session={cookie}", "X-Forwarded-Proto": "https"}
            listing = httpx.get(f"http://127.0.0.1:{port}/history", headers=headers, timeout=60).text
            found = httpx.get(f"http://127.0.0.1:{port}/history?q=risk", headers=headers, timeout=60).text
            view.append((CONVERSATION.findall(listing), CONVERSATION.findall(found)))
        views.append(view)
    return views


def stored_rows(url: str) -> dict[int, tuple[str, int]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT id, status, attempts, error FROM message WHERE kind <> 'audit'")).all()
    finally:
        engine.dispose()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def run(args) -> dict:
    from nistchat.config import GGUF_MODELS
    from tests import nginx_site
    from tests.openai_server import API_KEY, LlamaCppServer
    from tests.postgres_server import PostgresServer, find_bindir, free_port

    if threading.current_thread() is threading.main_thread():  # a SIGTERM still stops every server started
        signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench_processes: terminated"))
    bindir = find_bindir()
    if bindir is None or not nginx_site.available():
        raise SystemExit("needs PostgreSQL's server programs, nginx and openssl (Debian: postgresql nginx openssl)")
    with tempfile.TemporaryDirectory(prefix="nistchat-bench-processes-") as tmp:
        tmp = Path(tmp)
        postgres = PostgresServer(bindir).start()
        reader = LlamaCppServer(Path(args.models_dir) / GGUF_MODELS["qwen2.5-coder-0.5b"], tmp / "reader.log",
                                n_ctx=4096, threads=args.reader_threads)
        serves: list[subprocess.Popen] = []
        proxy = None
        try:
            database_url = postgres.url(postgres.create_database())
            reader.start()
            instance = tmp / "instance"
            write_config(instance, args, database_url, reader.base_url)
            env = {**os.environ, "NISTCHAT_INSTANCE_DIR": str(instance), "NISTCHAT_OPENAI_API_KEY": API_KEY}
            for key in ("NISTCHAT_DATABASE_URL", "NISTCHAT_BACKEND", "NISTCHAT_QUEUE_SHARED", "NISTCHAT_MODELS_DIR"):
                env.pop(key, None)  # the bench's config.toml says what it runs
            serves, ports = start_serves(args, instance, env, tmp)
            https_port = free_port()
            (tmp / "nginx").mkdir()
            proxy = nginx_site.start([f"127.0.0.1:{p}" for p in ports], free_port(), https_port, tmp / "nginx")
            base = f"https://127.0.0.1:{https_port}"

            tally = Tally()
            sampler = CapSampler(database_url)
            sampler.start()
            started = time.monotonic()
            deadline = started + args.seconds
            browsers = [Browser(i, base, nginx_site.HOST, tally, seed=i) for i in range(args.clients)]
            impatient = set(range(0, args.clients, 10))  # every tenth client asks three at once
            askers = [i for i in range(args.clients) if i not in impatient][:args.real_questions]
            threads = [threading.Thread(target=b.run, args=(deadline, i in askers, i in impatient, args.think_s,
                                                            args.seconds), name=f"client-{i}")
                       for i, b in enumerate(browsers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=args.seconds + args.drain_s)
            drained_s = time.monotonic() - deadline
            sampler.stop.set()
            sampler.join(5)
            sampler.engine.dispose()
            cookies = [b.client.cookies.get("session") for b in browsers[:4] if b.client.cookies.get("session")]
            views = history_views(ports, cookies, nginx_site.HOST)
            rows = stored_rows(database_url)
            still_running = sum(t.is_alive() for t in threads)
        finally:
            if proxy is not None:
                nginx_site.stop(proxy)
            for serve in serves:
                serve.terminate()
            for serve in serves:
                try:
                    serve.wait(30)
                except subprocess.TimeoutExpired:
                    serve.kill()
            reader.stop()
            postgres.stop()
    accepted = set(tally.accepted)
    finished = {mid for mid, (status, _a, _e) in rows.items() if status in ("done", "error")}
    return {
        "processes": args.processes, "clients": args.clients, "seconds": args.seconds,
        "requests": tally.requests, "server_errors": tally.server_errors, "error_samples": tally.errors,
        "asks": tally.asks, "accepted": len(tally.accepted), "accepted_distinct": len(accepted),
        "refused_browser": tally.refused["browser"], "refused_server": tally.refused["server"],
        "refused_rate": tally.refused["rate"],
        "stored": len(accepted & finished), "lost": len(accepted - finished),
        "rows_not_asked": len(set(rows) - accepted), "run_more_than_once": sum(1 for m in accepted if rows.get(m, ("", 0, ""))[1] > 1),
        "answers_failed": sum(1 for m in accepted if rows.get(m, ("", 0, ""))[0] == "error"),
        "failure_samples": sorted({(rows[m][2] or "")[:160] for m in accepted if rows.get(m, ("",))[0] == "error"})[:5],
        "pending_at_end": sum(1 for m in accepted if rows.get(m, ("",))[0] == "pending"),
        "streams": tally.streams, "streams_with_tokens": tally.streams_with_tokens,
        "answer_p50_s": round(sorted(tally.answer_s)[len(tally.answer_s) // 2], 1) if tally.answer_s else None,
        "answer_p95_s": round(p95(tally.answer_s), 1),
        "searches": len(tally.search_ms), "search_p95_ms": round(p95(tally.search_ms), 1),
        "max_serving": sampler.max_serving, "max_waiting": sampler.max_waiting,
        "max_waiting_per_browser": sampler.max_waiting_per_browser, "cap_samples": sampler.samples,
        "max_waiting_cap": args.max_waiting, "history_same": all(v == views[0] for v in views),
        "history_browsers_compared": len(cookies), "drain_s": round(drained_s, 1), "clients_unfinished": still_running,
    }


def failures(result: dict) -> list[str]:
    problems = []
    if result["server_errors"]:
        problems.append(f"{result['server_errors']} responses were 5xx or failed: {result['error_samples']}")
    if result["lost"] or result["rows_not_asked"] or result["run_more_than_once"]:
        problems.append(f"not stored exactly once: lost {result['lost']}, extra rows {result['rows_not_asked']}, "
                        f"run twice {result['run_more_than_once']}")
    if result["accepted"] != result["accepted_distinct"]:
        problems.append("one message id was accepted twice")
    if result["max_serving"] > 1 or result["max_waiting"] > result["max_waiting_cap"] \
            or result["max_waiting_per_browser"] > 2:
        problems.append(f"caps exceeded: serving {result['max_serving']}, waiting {result['max_waiting']}, "
                        f"one browser {result['max_waiting_per_browser']}")
    if not result["refused_browser"]:
        problems.append("no third question was refused by the per-browser cap")
    if not result["history_same"] or not result["history_browsers_compared"]:
        problems.append("History differs between the processes")
    if result["clients_unfinished"]:
        problems.append(f"{result['clients_unfinished']} clients still waiting after the drain")
    return problems


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--think-s", type=float, default=3.0, help="a person's pause between two actions (mean)")
    parser.add_argument("--real-questions", type=int, default=6,
                        help="clients that ask one real question (besides the impatient ones' three)")
    parser.add_argument("--drain-s", type=float, default=900.0, help="how long answers may still finish after")
    parser.add_argument("--max-waiting", type=int, default=48, help="queue.max_waiting (room for every browser)")
    parser.add_argument("--max-tokens", type=int, default=32, help="short answers: the run measures the web side")
    parser.add_argument("--context-tokens", type=int, default=250)
    parser.add_argument("--reader-threads", type=int, default=2)
    parser.add_argument("--data-dir", default=os.environ.get("NISTCHAT_DATA_DIR", str(ROOT / "data")),
                        help="holds index/ (nistchat ingest)")
    parser.add_argument("--models-dir", default=os.environ.get("NISTCHAT_MODELS_DIR", str(ROOT / "data" / "models")))
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    result = run(args)
    problems = failures(result)
    print(json.dumps({"bench": "processes", **result, "ok": not problems}))
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

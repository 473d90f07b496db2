"""A second dense list from a stronger embedder (EmbeddingGemma-300m by default), fused by RRF
beside the question's MiniLM, BM25 and identifier lists.

Why beside and not instead: on the held-out test set EmbeddingGemma finds what users describe in
everyday words far more often than MiniLM, while the MiniLM pipeline (and the refusal gate's
calibration) stays as measured; fusing both gave the best test score for the least loss on dev
(docs/decisions.md, "A second embedder").

Why in the background: embedding the corpus with it takes 8-10 minutes on 2 cores, too long for
a cold `make run`. `nistchat serve` builds it in a separate, low-priority process after the site
is up (`start_build`); until then retrieval runs without it and the trace says so, and `/status`
shows the build's progress. Vectors are cached by content hash (data/embcache/), so a rebuild
embeds only changed text, and the file records which children it covers: after a re-ingest a
stale file is never used, and is rebuilt.

    python -m nistchat.engine.index.second --index-dir data/index --models-dir data/models \
        --embedder embeddinggemma-300m        # what the background build runs
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from ..background import AnswerFlag, BackgroundJob
from ..backends.select import local_model_path
from .index import EmbeddingCache, build_dense, cache_dir_for, embed_children, text_key
from ..processes import pid_alive

FAISS_FILE = "dense2.faiss"
META_FILE = "dense2.json"
PROGRESS_FILE = "dense2.progress.json"
CHECK_EVERY_S = 5.0  # how often retrieval looks for a newly finished build
RETRY_FAILED_S = 60.0  # after the model failed at query time, when to try it again
BATCH = 8  # children a batch: a batch is the longest an answer waits for the build to pause


def fingerprint(children) -> str:
    """Which children (ids and text) the vectors are for: a re-ingest that changes any is a new one."""
    h = hashlib.sha256()
    for c in children:
        h.update(c.id.encode())
        h.update(text_key(c.text).encode())
    return h.hexdigest()


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def build(index_dir: Path, models_dir: Path, name: str, *, log=print, yield_to_answers: bool = True,
          max_pause_s: float = 600.0) -> dict:
    """Embed every child of the index at `index_dir` with embedder `name` (cache first), write the
    FAISS file and its record, and report progress in PROGRESS_FILE as it goes. With
    `yield_to_answers`, it waits between batches while a web process answers (engine/background.py),
    at most `max_pause_s` at a stretch, saving its cache first so a restart keeps what it did."""
    from .index import Index

    index_dir = Path(index_dir)
    progress_path = index_dir / PROGRESS_FILE
    started = time.time()
    index = Index.load(index_dir)
    children = index.children
    state = {"state": "building", "embedder": name, "done": 0, "total": len(children), "started": started,
             "pid": os.getpid()}
    _write_json(progress_path, state)
    try:
        with BackgroundJob(index_dir):
            return _build(index_dir, models_dir, name, children, state, progress_path, started, log=log,
                          yield_to_answers=yield_to_answers, max_pause_s=max_pause_s)
    except Exception as exc:
        state.update(state="failed", error=f"{type(exc).__name__}: {exc}")
        _write_json(progress_path, state)
        raise


def _build(index_dir: Path, models_dir: Path, name: str, children, state: dict, progress_path: Path,
           started: float, *, log, yield_to_answers: bool, max_pause_s: float) -> dict:
    """`build`'s work, while the job's mark says a background job runs (engine/background.py)."""
    import faiss

    from ..backends.embedded import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(local_model_path(models_dir, name), name=name)
    cache = EmbeddingCache(EmbeddingCache.path_for(cache_dir_for(index_dir), name, embedder.dim), embedder.dim)

    flag = AnswerFlag(index_dir)

    def progress(done: int, _total: int) -> None:
        state["done"] = done
        _write_json(progress_path, state)
        if yield_to_answers and flag.held():
            cache.save()
            state["paused"] = True
            _write_json(progress_path, state)
            state["paused_s"] = round(state.get("paused_s", 0.0) + flag.wait_while_held(max_pause_s), 1)
            state["paused"] = False
            _write_json(progress_path, state)

    vectors, _hits, embedded = embed_children(children, embedder, cache, batch_size=BATCH, on_batch=progress)
    cache.save()
    tmp = index_dir / f".{FAISS_FILE}.tmp{os.getpid()}"
    faiss.write_index(build_dense(vectors), str(tmp))
    os.replace(tmp, index_dir / FAISS_FILE)
    meta = {"embedder": name, "dim": int(embedder.dim), "children": len(children),
            "fingerprint": fingerprint(children), "seconds": round(time.time() - started, 1)}
    _write_json(index_dir / META_FILE, meta)
    state.update(state="done", done=len(children), seconds=meta["seconds"])
    _write_json(progress_path, state)
    log(f"second embedder {name}: {len(children)} children ({embedded} embedded) in {meta['seconds']} s")
    return state


_EMBEDDERS: dict[Path, object] = {}
_EMBEDDERS_LOCK = threading.Lock()


def query_embedder(path: Path, name: str):
    """One loaded copy of the model per process (1.2 GB for EmbeddingGemma), however many
    retrievers (a Runtime.derived for an eval run) search with it."""
    with _EMBEDDERS_LOCK:
        if path not in _EMBEDDERS:
            from ..backends.embedded import SentenceTransformerEmbedder

            _EMBEDDERS[path] = SentenceTransformerEmbedder(path, name=name)
        return _EMBEDDERS[path]


class SecondDense:
    """The second embedder's vectors for the current index, and the embedder for queries.

    `available()` is cheap to call on every retrieval: it loads the file once it exists and matches
    the index, and otherwise looks again at most every CHECK_EVERY_S seconds."""

    def __init__(self, index, index_dir: Path, models_dir: Path, name: str):
        self.index, self.index_dir, self.models_dir, self.name = index, Path(index_dir), Path(models_dir), name
        self._lock = threading.Lock()
        self._dense = None
        self._next_check = 0.0
        self._fingerprint: str | None = None
        self.reason = "not built yet"

    def installed(self) -> bool:
        return local_model_path(self.models_dir, self.name).is_dir()

    def available(self) -> bool:
        with self._lock:
            if self._dense is not None:
                return True
            now = time.monotonic()
            if now < self._next_check:
                return False
            self._next_check = now + CHECK_EVERY_S
            if not self.installed():
                self.reason = (f"{self.name} is not installed (`nistchat models install --embedder "
                               f"{self.name}`)")
                return False
            meta = read_json(self.index_dir / META_FILE)
            if not meta:
                self.reason = self.progress_line()
                return False
            if self._fingerprint is None:
                self._fingerprint = fingerprint(self.index.children)
            if meta.get("embedder") != self.name or meta.get("fingerprint") != self._fingerprint:
                self.reason = "built for another index or embedder: rebuilt at the next `nistchat serve`"
                return False
            import faiss

            self._dense = faiss.read_index(str(self.index_dir / FAISS_FILE))
            self.reason = ""
            return True

    def disable(self, reason: str) -> None:
        """Stop using the list after a failure (a broken model file) and try again RETRY_FAILED_S later."""
        with self._lock:
            self._dense = None
            self._next_check = time.monotonic() + RETRY_FAILED_S
            self.reason = reason

    def progress_line(self) -> str:
        p = read_json(self.index_dir / PROGRESS_FILE)
        if p.get("state") == "building":
            paused = " (paused while an answer is written)" if p.get("paused") else ""
            return f"being built: {p.get('done', 0)} of {p.get('total', '?')} passages embedded{paused}"
        if p.get("state") == "failed":
            return f"the build failed: {p.get('error', '?')}"
        return "not built yet (`nistchat serve` builds it in the background)"

    def search(self, question: str, depth: int) -> list[tuple[int, float]]:
        """(children row, cosine) for the `depth` nearest children to the question."""
        vector = query_embedder(local_model_path(self.models_dir, self.name), self.name).embed_query([question])
        depth = min(depth, self._dense.ntotal)
        scores, rows = self._dense.search(np.ascontiguousarray(vector, dtype=np.float32), depth)
        return [(int(r), float(s)) for s, r in zip(scores[0], rows[0]) if r >= 0]

    def state(self) -> dict:
        """For /status: the embedder, whether its list is in use, and else why not (with progress)."""
        ready = self.available()
        return {"embedder": self.name, "ready": ready, "reason": "" if ready else self.reason,
                "progress": read_json(self.index_dir / PROGRESS_FILE)}


def needs_build(index_dir: Path, models_dir: Path, name: str, index) -> bool:
    """The embedder is installed, and no finished, matching build exists and none is running."""
    if not name or not local_model_path(models_dir, name).is_dir():
        return False
    meta = read_json(Path(index_dir) / META_FILE)
    if meta.get("embedder") == name and meta.get("fingerprint") == fingerprint(index.children):
        return False
    progress = read_json(Path(index_dir) / PROGRESS_FILE)
    if progress.get("state") == "building" and progress.get("pid") and pid_alive(progress["pid"]):
        return False
    return True


def start_build(index_dir: Path, models_dir: Path, name: str, index, *, log=print, yield_to_answers: bool = True,
                max_pause_s: float = 600.0) -> subprocess.Popen | None:
    """Start the build in a low-priority child process when `needs_build`; None otherwise. A child
    process keeps torch's threads and memory out of the web process; it pauses while people's
    answers run (`build`), and `nice` keeps the web process's own work ahead of it."""
    if not needs_build(index_dir, models_dir, name, index):
        return None
    log(f"second embedder {name}: building its vectors in the background (status page shows progress)")
    return subprocess.Popen(
        [sys.executable, "-m", "nistchat.engine.index.second", "--index-dir", str(index_dir),
         "--models-dir", str(models_dir), "--embedder", name, "--max-pause-s", str(max_pause_s)]
        + ([] if yield_to_answers else ["--no-yield"]),
        stdin=subprocess.DEVNULL, preexec_fn=lambda: os.nice(10))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build the second embedder's vectors for an index.")
    ap.add_argument("--index-dir", type=Path, required=True)
    ap.add_argument("--models-dir", type=Path, required=True)
    ap.add_argument("--embedder", required=True)
    ap.add_argument("--no-yield", action="store_true", help="do not pause while a web process answers")
    ap.add_argument("--max-pause-s", type=float, default=600.0, help="longest pause at a stretch")
    args = ap.parse_args(argv)
    build(args.index_dir, args.models_dir, args.embedder, yield_to_answers=not args.no_yield,
          max_pause_s=args.max_pause_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())

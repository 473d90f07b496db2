"""A second dense list from a stronger embedder (EmbeddingGemma-300m by default), fused by RRF
beside the question's MiniLM, BM25 and identifier lists.

Why beside and not instead: EmbeddingGemma reads what users describe in everyday words far
better than MiniLM, while the MiniLM lists and the refusal gate's calibration stay as they were
fitted; beside also beat instead on dev (docs/decisions.md, "EmbeddingGemma beside MiniLM, built
in the background").

Why in the background: embedding the corpus with it takes minutes on a small CPU, too long for a
cold `make run`. `nistchat serve` builds it in a separate, low-priority process after the site
is up (`start_build`); until then retrieval runs without it and the trace says so, and `/status`
shows the build's progress. Vectors are cached by content hash (data/embcache/), so a rebuild
embeds only changed text, and the file records which children it covers: after a re-ingest a
stale file is never used, and is rebuilt.
The build itself is `second_build.py`, a job of its own process.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..backends.base import Embedder
from ..backends.select import local_model_path
from .index import text_key
from ..processes import pid_alive

FAISS_FILE = "dense2.faiss"
META_FILE = "dense2.json"
PROGRESS_FILE = "dense2.progress.json"
CHECK_EVERY_S = 5.0  # how often retrieval looks for a newly finished build
RETRY_FAILED_S = 60.0  # after the model failed at query time, when to try it again


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


class SecondDense:
    """The second embedder's vectors for the current index, and the embedder for queries.

    `available()` is cheap to call on every retrieval: it loads the file once it exists and matches
    the index, and otherwise looks again at most every CHECK_EVERY_S seconds."""

    def __init__(self, index, index_dir: Path, models_dir: Path, name: str,
                 embedder: Callable[[], Embedder] | None = None):
        """`embedder()` gives the model for questions (the registry's one copy per process: 1.2 GB
        for EmbeddingGemma, however many retrievers search with it); None: no searches."""
        self.index, self.index_dir, self.models_dir, self.name = index, Path(index_dir), Path(models_dir), name
        self.embedder = embedder
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
        vector = self.embedder().embed_query([question])
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

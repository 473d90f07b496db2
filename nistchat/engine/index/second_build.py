"""The second embedder's build: every child embedded with it (cache first) in a low-priority
process of its own, pausing while people's answers run, its progress in a file `/status` reads.

    python -m nistchat.engine.index.second_build --index-dir data/index --models-dir data/models \
        --embedder embeddinggemma-300m        # what `nistchat serve` starts in the background
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from ..background import AnswerFlag, BackgroundJob
from ..backends.select import local_model_path
from .dense import build_dense
from .index import EmbeddingCache, cache_dir_for, embed_children
from .second import FAISS_FILE, META_FILE, PROGRESS_FILE, _write_json, fingerprint, needs_build

BATCH = 8  # children a batch: a batch is the longest an answer waits for the build to pause


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


def start_build(index_dir: Path, models_dir: Path, name: str, index, *, log=print, yield_to_answers: bool = True,
                max_pause_s: float = 600.0) -> subprocess.Popen | None:
    """Start the build in a low-priority child process when `needs_build`; None otherwise. A child
    process keeps torch's threads and memory out of the web process; it pauses while people's
    answers run (`build`), and `nice` keeps the web process's own work ahead of it."""
    if not needs_build(index_dir, models_dir, name, index):
        return None
    log(f"second embedder {name}: building its vectors in the background (status page shows progress)")
    return subprocess.Popen(
        # `-c`, not `-m`: the package imports this module first, and runpy warns about that on every start
        [sys.executable, "-c", _MAIN, "--index-dir", str(index_dir),
         "--models-dir", str(models_dir), "--embedder", name, "--max-pause-s", str(max_pause_s)]
        + ([] if yield_to_answers else ["--no-yield"]),
        stdin=subprocess.DEVNULL, preexec_fn=lambda: os.nice(10))


_MAIN = "import sys; from nistchat.engine.index.second_build import main; sys.exit(main())"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nistchat.engine.index.second_build",
                                 description="Build the second embedder's vectors for an index.")
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

"""Cold and warm ingest times for the markdown corpus, into a throwaway data dir.

cold   = empty embedding cache, nothing built (everything parsed, chunked and embedded)
warm   = second run, nothing changed (manifest says up to date)
reindex= index deleted but embedding cache kept (parse + chunk + write; 0 embedded)

Usage: python scripts/bench_ingest.py [--corpus DIR]
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from nistchat.config import load_settings
from nistchat.engine.index import ingest_corpus
from nistchat.engine.runtime import Runtime

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus" / "markdown")
    args = ap.parse_args()
    t = time.perf_counter()
    embedder = Runtime(load_settings()).models.get("embedder")
    print(f"embedder {embedder.name} loaded in {time.perf_counter() - t:.1f} s (not counted below)")
    with tempfile.TemporaryDirectory(prefix="nistchat-bench-") as tmp:
        index_dir = Path(tmp) / "data" / "index"
        runs = {}
        for label in ("cold", "warm", "reindex"):
            if label == "reindex":
                shutil.rmtree(index_dir)
            t = time.perf_counter()
            summary = ingest_corpus(args.corpus, index_dir, embedder, log=lambda *_: None, progress=False)
            runs[label] = (time.perf_counter() - t, summary)
    cold = runs["cold"][1]
    print(f"corpus {args.corpus}: {cold.documents} documents, {cold.parents} parents, "
          f"{cold.children_total} children")
    print("parents by kind:  " + ", ".join(f"{k} {v}" for k, v in cold.parents_by_kind.items()))
    print("children by kind: " + ", ".join(f"{k} {v}" for k, v in cold.children.items()))
    print(f"tables {cold.tables}, figures {cold.figures}, errors {len(cold.errors)}")
    for label, (seconds, s) in runs.items():
        state = "up to date" if s.up_to_date else f"embedded {s.embedded}, cache hits {s.cache_hits}"
        print(f"{label:<8} {seconds:7.2f} s  ({state})")


if __name__ == "__main__":
    main()

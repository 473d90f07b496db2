"""The searchable index: stores + dense FAISS index + BM25 (`dense.py`, `sparse.py`), and the
embedding cache.

`Index.load(index_dir)` gives everything retrieval needs:
  parents (id -> Parent), children (row order), child_row (id -> row), dense (faiss.IndexFlatIP
  over L2-normalised child embeddings; row i is children[i]), bm25 (BM25Okapi over children with
  in_bm25) with bm25_rows (BM25 position -> children row), manifest.

BM25 is rebuilt from children.jsonl at load (well under a second for a few thousand children),
so there is no pickle to version. `bm25_tokenize` is THE tokenizer for both sides: indexing here
and queries in search, so identifiers match exactly.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Callable

import numpy as np

from .dense import DENSE_FILE, DenseSearch
from .sparse import SparseSearch, bm25_tokenize
from .store import CHILDREN_FILE, MANIFEST_FILE, PARENTS_FILE, ChildStore, ParentStore, StoreError, load_manifest
from ..types import Child, Parent

def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_dir_for(index_dir: Path) -> Path:
    """Where an index's embedding caches live: beside it, so rebuilding the index keeps them."""
    return Path(index_dir).parent / "embcache"


class EmbeddingCache:
    """Vectors by sha256 of the exact text embedded, one .npz per embedder (name + dims).

    Lives beside the index (data/embcache/) so rebuilding the index keeps it: unchanged children
    are never embedded twice; a changed document re-embeds only its changed children.
    """

    def __init__(self, path: Path, dim: int):
        self.path = Path(path)
        self.dim = dim
        self.vectors: dict[str, np.ndarray] = {}
        self.dirty = False
        if self.path.is_file():
            try:
                with np.load(self.path, allow_pickle=False) as data:
                    keys, vecs = data["keys"], data["vectors"]
                if vecs.ndim == 2 and vecs.shape[1] == dim:
                    self.vectors = {str(k): v for k, v in zip(keys, vecs)}
            except (OSError, ValueError, KeyError):
                self.vectors = {}  # a corrupt cache is only a slower run

    @staticmethod
    def path_for(cache_dir: Path, embedder_name: str, dim: int) -> Path:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", embedder_name).strip("_") or "embedder"
        return Path(cache_dir) / f"{safe}-{dim}.npz"

    def get(self, key: str) -> np.ndarray | None:
        return self.vectors.get(key)

    def put(self, key: str, vector: np.ndarray) -> None:
        self.vectors[key] = np.asarray(vector, dtype=np.float32)
        self.dirty = True

    def prune(self, keep: set[str]) -> None:
        """Drop vectors of texts no longer in the corpus, so the cache does not grow forever."""
        stale = set(self.vectors) - keep
        for k in stale:
            del self.vectors[k]
        self.dirty = self.dirty or bool(stale)

    def save(self) -> None:
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self.vectors)
        vecs = np.stack([self.vectors[k] for k in keys]).astype(np.float32) if keys else \
            np.zeros((0, self.dim), dtype=np.float32)
        tmp = self.path.with_name(self.path.stem + f".tmp{os.getpid()}.npz")
        np.savez(tmp, keys=np.array(keys), vectors=vecs)
        os.replace(tmp, self.path)
        self.dirty = False


def embed_children(children: list[Child], embedder, cache: EmbeddingCache, *, progress: bool = False,
                   batch_size: int = 32, on_batch: Callable[[int, int], None] | None = None,
                   save_every: int = 10) -> tuple[np.ndarray, int, int]:
    """Vectors for every child (row order), using the cache; returns (matrix, cache_hits, embedded).

    With `on_batch(done, total)` the missing texts are embedded a batch at a time, the callback
    hears the progress after each, and the cache is saved every `save_every` batches, so a long
    build that is stopped resumes from there (the background build of engine/index/second.py)."""
    keys = [text_key(c.text) for c in children]
    missing = {}
    for k, c in zip(keys, children):
        if cache.get(k) is None and k not in missing:
            missing[k] = c.text
    if missing and on_batch is None:
        vecs = np.asarray(embedder.embed(list(missing.values()), batch_size=batch_size, show_progress=progress),
                          dtype=np.float32)
        for k, v in zip(missing, vecs):
            cache.put(k, v)
    elif missing:
        pending, done = list(missing.items()), len(children) - len(missing)
        for n, i in enumerate(range(0, len(pending), batch_size), start=1):
            batch = pending[i:i + batch_size]
            for (k, _text), v in zip(batch, embedder.embed([t for _k, t in batch], batch_size=batch_size)):
                cache.put(k, v)
            done += len(batch)
            on_batch(done, len(children))
            if n % save_every == 0:
                cache.save()
    matrix = np.stack([cache.get(k) for k in keys]).astype(np.float32) if keys else \
        np.zeros((0, cache.dim), dtype=np.float32)
    return matrix, len(children) - len(missing), len(missing)


class Index:
    """A loaded, read-only index (see module docstring for the attributes)."""

    def __init__(self, parents: dict[str, Parent], children: list[Child], dense, manifest: dict):
        from rank_bm25 import BM25Okapi

        self.parents = parents
        self.children = children
        self.child_row = {c.id: i for i, c in enumerate(children)}
        self.dense = dense
        self.manifest = manifest
        self.bm25_rows = [i for i, c in enumerate(children) if c.in_bm25]
        corpus = [bm25_tokenize(children[i].text) for i in self.bm25_rows]
        self.bm25 = BM25Okapi(corpus) if corpus else None
        ids = [c.id for c in children]
        self.dense_search = DenseSearch(dense, ids)
        self.sparse_search = SparseSearch(self.bm25, self.bm25_rows, ids)

    @staticmethod
    def exists(index_dir: Path) -> bool:
        d = Path(index_dir)
        return all((d / name).is_file() for name in (MANIFEST_FILE, PARENTS_FILE, CHILDREN_FILE, DENSE_FILE))

    @classmethod
    def load(cls, index_dir: Path) -> "Index":
        import faiss

        d = Path(index_dir)
        if not cls.exists(d):
            raise StoreError(f"no complete index at {d}")
        manifest = load_manifest(d) or {}
        parents = ParentStore.load(d).parents
        children = ChildStore.load(d).children
        dense = faiss.read_index(str(d / DENSE_FILE))
        if dense.ntotal != len(children):
            raise StoreError(f"{d}: dense index has {dense.ntotal} rows but there are {len(children)} children; "
                             f"run `nistchat ingest --rebuild`")
        return cls(parents, children, dense, manifest)

    def parent_of(self, child: Child | str) -> Parent:
        cid = child if isinstance(child, str) else child.id
        return self.parents[self.children[self.child_row[cid]].parent_id]

    def vector(self, row: int) -> np.ndarray:
        return self.dense.reconstruct(row)

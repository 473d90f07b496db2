"""Dense search: FAISS inner product over the children's L2-normalised vectors (row i is children[i])."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..types import Ranked

DENSE_FILE = "dense.faiss"


def build_dense(vectors: np.ndarray):
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    if len(vectors):
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def write_dense(index, index_dir: Path) -> None:
    import faiss

    faiss.write_index(index, str(Path(index_dir) / DENSE_FILE))


class DenseSearch:
    """`search(vector, depth)`: the `depth` nearest children, best first, as (child id, cosine)."""

    def __init__(self, faiss_index, ids: list[str]):
        self.faiss_index, self.ids = faiss_index, ids

    def search(self, vector: np.ndarray, depth: int) -> Ranked:
        depth = min(depth, self.faiss_index.ntotal)
        if depth <= 0:
            return []
        scores, rows = self.faiss_index.search(np.asarray(vector, dtype="float32").reshape(1, -1), depth)
        return [(self.ids[int(r)], float(s)) for s, r in zip(scores[0], rows[0]) if r >= 0]

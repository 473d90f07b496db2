"""Stage 2, the index: children embedded into FAISS, BM25 over their words, the parents and the
manifest on disk, and the second embedder's vectors (built in the background)."""
from .build import IngestError, ingest_corpus
from .index import Index
from .second import SecondDense, needs_build
from .second_build import build as build_second, start_build
from .store import StoreError

__all__ = ["Index", "IngestError", "SecondDense", "StoreError", "build_second", "ingest_corpus", "needs_build",
           "start_build"]

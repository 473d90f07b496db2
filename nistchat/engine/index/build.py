"""Corpus directory -> index directory, end to end, safely.

Reads every .md/.pdf (sorted, so runs are reproducible), chunks, embeds through the content-hash
cache, and writes stores + FAISS + manifest into a temporary sibling directory that is swapped in
with renames only when complete: an interrupted run leaves the previous index untouched. A bad
file is reported in `errors` and skipped; the rest still ingests.
"""
from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ..corpus.chunking import ChunkConfig, chunk_document
from ..corpus.documents import SUPPORTED_SUFFIXES, DocumentError, read_document, sha256_bytes
from .dense import build_dense, write_dense
from .index import EmbeddingCache, Index, cache_dir_for, embed_children
from ..processes import pid_alive
from .store import ChildStore, ParentStore, load_manifest, save_manifest
from ..types import Child, Parent

INGEST_VERSION = 5  # bump when parsing/chunking changes what an unchanged corpus produces


class IngestError(RuntimeError):
    """Ingestion cannot start at all (e.g. no corpus directory); per-file problems go to errors."""


@dataclass
class IngestSummary:
    documents: int = 0
    parents: int = 0
    parents_by_kind: dict[str, int] = field(default_factory=dict)
    children: dict[str, int] = field(default_factory=dict)  # by kind
    tables: int = 0  # table parents
    figures: int = 0  # figure parents
    seconds: float = 0.0
    cache_hits: int = 0
    embedded: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    up_to_date: bool = False
    index_dir: str = ""

    @property
    def children_total(self) -> int:
        return sum(self.children.values())

    def to_dict(self) -> dict:
        d = asdict(self)
        d["errors"] = [list(e) for e in self.errors]
        d["children_total"] = self.children_total
        return d


def corpus_files(corpus_dir: Path) -> list[Path]:
    return sorted(p for p in Path(corpus_dir).iterdir()
                  if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES and not p.name.startswith("."))


def ingest_corpus(corpus_dir: Path, index_dir: Path, embedder, *, rebuild: bool = False,
                  log: Callable[..., None] = print, progress: bool = True,
                  config: ChunkConfig = ChunkConfig()) -> IngestSummary:
    started = time.perf_counter()
    corpus_dir, index_dir = Path(corpus_dir), Path(index_dir)
    if not corpus_dir.is_dir():
        raise IngestError(f"corpus directory {corpus_dir} does not exist "
                          f"(set NISTCHAT_CORPUS_DIR, pass --corpus, or run `nistchat corpus download`)")
    _recover_interrupted_swap(index_dir)
    files = corpus_files(corpus_dir)
    if not files:
        raise IngestError(f"no .md or .pdf files in {corpus_dir}")
    hashes = {p.name: sha256_bytes(p.read_bytes()) for p in files}
    fingerprint = {"ingest_version": INGEST_VERSION, "embedder": embedder.name, "dim": int(embedder.dim),
                   "chunking": config.to_dict(), "files": hashes}

    previous = load_manifest(index_dir)
    if not rebuild and previous and Index.exists(index_dir) and \
            all(previous.get(k) == v for k, v in fingerprint.items()):
        summary = IngestSummary(**{k: v for k, v in previous.get("summary", {}).items()
                                   if k in IngestSummary.__dataclass_fields__})
        summary.errors = [tuple(e) for e in summary.errors]
        summary.up_to_date, summary.cache_hits, summary.embedded = True, 0, 0
        summary.seconds = round(time.perf_counter() - started, 2)
        summary.index_dir = str(index_dir)
        log(f"Index at {index_dir} is up to date ({summary.documents} documents, embedder {embedder.name}).")
        return summary

    summary = IngestSummary(index_dir=str(index_dir))
    parents: list[Parent] = []
    children: list[Child] = []
    documents_meta: list[dict] = []
    seen_sha: dict[str, str] = {}
    seen_id: dict[str, str] = {}
    for path in files:
        sha = hashes[path.name]
        if sha in seen_sha:
            summary.errors.append((path.name, f"duplicate document: same content as {seen_sha[sha]}; skipped"))
            log(f"  skipped {path.name}: same content as {seen_sha[sha]}")
            continue
        try:
            doc = read_document(path)
        except DocumentError as exc:
            summary.errors.append((path.name, exc.reason))
            log(f"  skipped {path.name}: {exc.reason}")
            continue
        if doc.doc_id in seen_id:
            summary.errors.append((path.name, f"duplicate document id {doc.doc_id!r} (already read from "
                                              f"{seen_id[doc.doc_id]}); skipped"))
            log(f"  skipped {path.name}: document {doc.doc_id} already read from {seen_id[doc.doc_id]}")
            continue
        seen_sha[sha], seen_id[doc.doc_id] = path.name, path.name
        doc_parents, doc_children = chunk_document(doc, config)
        parents.extend(doc_parents)
        children.extend(doc_children)
        kinds = Counter(p.kind for p in doc_parents)
        documents_meta.append({"doc": doc.doc_id, "title": doc.title, "source": path.name, "sha256": sha,
                               "parents": len(doc_parents), "children": len(doc_children),
                               "parents_by_kind": dict(sorted(kinds.items()))})
        log(f"  read {path.name}: {len(doc_parents)} parents, {len(doc_children)} children")
    if not parents:
        raise IngestError("no document could be read: " + "; ".join(f"{f}: {m}" for f, m in summary.errors))

    cache_path = EmbeddingCache.path_for(cache_dir_for(index_dir), embedder.name, int(embedder.dim))
    if rebuild and cache_path.exists():
        cache_path.unlink()
    cache = EmbeddingCache(cache_path, int(embedder.dim))
    vectors, summary.cache_hits, summary.embedded = embed_children(children, embedder, cache, progress=progress)
    cache.save()

    summary.documents = len(documents_meta)
    summary.parents = len(parents)
    summary.parents_by_kind = dict(sorted(Counter(p.kind for p in parents).items()))
    summary.children = dict(sorted(Counter(c.kind for c in children).items()))
    summary.tables = summary.parents_by_kind.get("table", 0)
    summary.figures = summary.parents_by_kind.get("figure", 0)
    summary.seconds = round(time.perf_counter() - started, 2)
    manifest = {**fingerprint, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "corpus_dir": str(corpus_dir), "documents": documents_meta, "summary": summary.to_dict()}
    _write_index_atomically(index_dir, parents, children, vectors, manifest)
    log(f"Wrote index to {index_dir}: {summary.documents} documents, {summary.parents} parents, "
        f"{summary.children_total} children ({summary.embedded} embedded, {summary.cache_hits} from cache).")
    return summary


def _write_index_atomically(index_dir: Path, parents: list[Parent], children: list[Child], vectors,
                            manifest: dict) -> None:
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = index_dir.parent / f".{index_dir.name}.tmp-{os.getpid()}"
    old = index_dir.parent / f".{index_dir.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        ParentStore(parents).save(tmp)
        ChildStore(children).save(tmp)
        write_dense(build_dense(vectors), tmp)
        save_manifest(tmp, manifest)  # written last: its presence marks a complete directory
        if index_dir.exists():
            os.replace(index_dir, old)
        os.replace(tmp, index_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not index_dir.exists():
            os.replace(old, index_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _recover_interrupted_swap(index_dir: Path) -> None:
    """If a run died between the two renames, put the previous index back; drop stale temp dirs."""
    parent = index_dir.parent
    if not parent.is_dir():
        return
    olds = sorted(parent.glob(f".{index_dir.name}.old-*"))
    if olds and not index_dir.exists():
        os.replace(olds[-1], index_dir)
    for stale in list(parent.glob(f".{index_dir.name}.tmp-*")) + list(parent.glob(f".{index_dir.name}.old-*")):
        if stale.is_dir():
            pid = stale.name.rsplit("-", 1)[-1]
            if pid.isdigit() and pid_alive(int(pid)) and int(pid) != os.getpid():
                continue  # another ingest is writing right now
            shutil.rmtree(stale, ignore_errors=True)

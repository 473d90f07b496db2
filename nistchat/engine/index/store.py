"""Parent and child stores on disk: `parents.jsonl`, `children.jsonl` and `manifest.json`.

JSONL rather than SQLite because at this size (~1k parents, a few thousand children, ~2 MB) it
loads in milliseconds, a person can read or grep it, and two builds can be compared with `diff`
(ids and order are deterministic). Row order in children.jsonl is the row order of the dense
index: children[i] <-> FAISS row i.

The manifest records what the index was built from (embedder, dims, chunking config, every corpus
file's sha256 and per-document counts) so ingestion can tell when it is up to date.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from ..types import Child, Parent

PARENTS_FILE = "parents.jsonl"
CHILDREN_FILE = "children.jsonl"
MANIFEST_FILE = "manifest.json"


class StoreError(RuntimeError):
    """An index directory whose stores are missing or unreadable."""


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")


def _read_jsonl(path: Path) -> list[dict]:
    try:
        with path.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise StoreError(f"{path}: cannot read ({exc})") from None


class ParentStore:
    """Parents by id, in document order."""

    def __init__(self, parents: Iterable[Parent] = ()):
        self.parents: dict[str, Parent] = {p.id: p for p in parents}

    def save(self, index_dir: Path) -> None:
        _write_jsonl(Path(index_dir) / PARENTS_FILE, (p.to_dict() for p in self.parents.values()))

    @classmethod
    def load(cls, index_dir: Path) -> "ParentStore":
        return cls(Parent(**row) for row in _read_jsonl(Path(index_dir) / PARENTS_FILE))


class ChildStore:
    """Children in index-row order."""

    def __init__(self, children: Iterable[Child] = ()):
        self.children: list[Child] = list(children)

    def save(self, index_dir: Path) -> None:
        _write_jsonl(Path(index_dir) / CHILDREN_FILE, (c.to_dict() for c in self.children))

    @classmethod
    def load(cls, index_dir: Path) -> "ChildStore":
        return cls(Child(**row) for row in _read_jsonl(Path(index_dir) / CHILDREN_FILE))


def save_manifest(index_dir: Path, manifest: dict) -> None:
    (Path(index_dir) / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                                 encoding="utf-8")


def load_manifest(index_dir: Path) -> dict | None:
    path = Path(index_dir) / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None

"""Ingestion end to end with the real embedder, FAISS and BM25: the real corpus (shared session
index), small corpora written into tmp_path (cache, determinism, bad input, atomic swap), one real
PDF, and the two commands."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from nistchat.engine.index import build as ingest_module
from nistchat.engine.index.index import Index
from nistchat.engine.index.sparse import bm25_tokenize
from nistchat.engine.index.build import IngestError, ingest_corpus

from tests.conftest import SHARED_CORPUS, make_settings
from tests.engine.corpus.test_documents import FIXTURE

CATEGORIES = ("Functionality", "Operational", "Human Factors", "Security", "Compliance", "Large-Scale Impacts")


class CountingEmbedder:
    """The real embedder, counting how many texts it was asked to embed."""

    def __init__(self, inner):
        self.inner, self.name, self.dim, self.calls = inner, inner.name, inner.dim, 0

    def embed(self, texts, *, batch_size=32, show_progress=False):
        self.calls += len(texts)
        return self.inner.embed(texts, batch_size=batch_size, show_progress=show_progress)


@pytest.fixture(scope="module")
def embedder(runtime):
    return runtime.models.get("embedder")


def quiet(*_):
    pass


# ---------------------------------------------------------------------------------------------
# The real markdown corpus (built once per session by the shared `runtime` fixture)

def test_index_is_consistent(index):
    assert index.dense.ntotal == len(index.children) == len(index.child_row)
    assert all(index.child_row[c.id] == i for i, c in enumerate(index.children))
    assert all(c.parent_id in index.parents for c in index.children)
    assert [index.children[r].in_bm25 for r in index.bm25_rows] == [True] * len(index.bm25_rows)
    assert len(index.bm25_rows) == sum(c.in_bm25 for c in index.children)
    assert index.manifest["embedder"] and index.manifest["dim"] == index.dense.d
    assert len(index.manifest["documents"]) == 7
    assert {p.kind for p in index.parents.values()} == {"prose", "table", "figure", "list"}


def test_dense_rows_match_children(index, embedder):
    """Row i of FAISS really is children[i]: a child's own text finds itself first."""
    for row in (0, len(index.children) // 2, len(index.children) - 1):
        vec = embedder.embed([index.children[row].text])
        _, hits = index.dense.search(np.asarray(vec, dtype=np.float32), 1)
        assert hits[0][0] == row


def test_bm25_finds_identifiers(index):
    scores = index.bm25.get_scores(bm25_tokenize("GOVERN 1.2"))
    top = index.children[index.bm25_rows[int(np.argmax(scores))]]
    assert re.search(r"GOVERN 1\.2\b", index.parents[top.parent_id].text)


def test_monitoring_table_is_one_parent_with_all_six_categories(index):
    tables = [p for p in index.parents.values()
              if p.doc == "NIST.AI.800-4" and p.kind == "table" and "Monitoring categories and definitions" in p.text]
    assert len(tables) == 1
    assert all(category in tables[0].text for category in CATEGORIES)
    assert "800-4" in tables[0].title and tables[0].heading_path == ["2. Monitoring Categories"]


def test_each_technical_description_is_exactly_one_figure_parent(index):
    expected = {}
    for path in sorted((SHARED_CORPUS / "markdown").glob("*.md")):
        n = len(re.findall(r"^> ### \*\*Technical Description", path.read_text(encoding="utf-8"), re.M))
        if n:
            expected[path.stem] = n
    figures = [p for p in index.parents.values() if p.kind == "figure"]
    got = {}
    for p in figures:
        got[p.doc] = got.get(p.doc, 0) + 1
        assert p.text.count("Technical Description") == 1
    assert got == expected and sum(got.values()) == 17


def test_no_child_is_only_a_page_header(index):
    header = re.compile(r"^(NIST (AI|SP) [\w.-]+(\s.*)?\|\s*Page \d+|Page \d+|\d{1,3})$")
    for c in index.children:
        content = c.text.split("\n", 1)[1].strip()
        assert content and not header.match(content), c.id
        assert "![" not in c.text


# ---------------------------------------------------------------------------------------------
# Small corpora in tmp_path

def write_corpus(folder, docs: dict[str, str | bytes]):
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in docs.items():
        (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return folder


SECOND = "# NIST AI 999-2 Another\n\n## 1. Intro\n\nA second document about gadget oversight and review.\n"


def test_cache_determinism_and_up_to_date(tmp_path, embedder):
    corpus = write_corpus(tmp_path / "corpus", {"NIST.AI.999-1.md": FIXTURE})
    index_dir = tmp_path / "data" / "index"
    counting = CountingEmbedder(embedder)

    first = ingest_corpus(corpus, index_dir, counting, log=quiet, progress=False)
    n_children = sum(first.children.values())
    assert first.documents == 1 and first.embedded == counting.calls == n_children and first.cache_hits == 0
    assert first.tables == 2 and first.figures == 1 and set(first.parents_by_kind) == {"prose", "table", "figure", "list"}
    ids_first = [c.id for c in Index.load(index_dir).children]
    parents_first = (index_dir / "parents.jsonl").read_text()

    again = ingest_corpus(corpus, index_dir, counting, log=quiet, progress=False)
    assert again.up_to_date and again.embedded == 0 and counting.calls == n_children

    rebuilt = ingest_corpus(corpus, index_dir, counting, rebuild=True, log=quiet, progress=False)
    assert not rebuilt.up_to_date and rebuilt.embedded == n_children  # --rebuild ignores the cache too
    assert [c.id for c in Index.load(index_dir).children] == ids_first
    assert (index_dir / "parents.jsonl").read_text() == parents_first

    # adding a document embeds only the new one; changing one re-embeds only its changed children
    write_corpus(corpus, {"NIST.AI.999-2.md": SECOND})
    counting.calls = 0
    added = ingest_corpus(corpus, index_dir, counting, log=quiet, progress=False)
    assert added.documents == 2 and added.cache_hits == n_children and added.embedded == counting.calls
    assert 0 < counting.calls <= 3
    write_corpus(corpus, {"NIST.AI.999-2.md": SECOND + "\nA new closing paragraph about gadget audits.\n"})
    counting.calls = 0
    changed = ingest_corpus(corpus, index_dir, counting, log=quiet, progress=False)
    assert 0 < changed.embedded == counting.calls <= 2
    assert [c.id for c in Index.load(index_dir).children][:len(ids_first)] == ids_first
    manifest = json.loads((index_dir / "manifest.json").read_text())
    assert [d["doc"] for d in manifest["documents"]] == ["NIST.AI.999-1", "NIST.AI.999-2"]
    assert all(len(d["sha256"]) == 64 for d in manifest["documents"])


def test_bad_files_are_reported_and_the_rest_ingests(tmp_path, embedder):
    corpus = write_corpus(tmp_path / "corpus", {
        "NIST.AI.999-1.md": FIXTURE,
        "copy-of-999-1.md": FIXTURE,  # same content
        "NIST.AI.999-2.md": SECOND,
        "NIST.AI.999-2.pdf": b"%PDF-1.4\nnot really a pdf at all\n",  # broken PDF
        "empty.md": b"",
        "junk.md": bytes(range(256)) * 10,
        "notes.txt": b"ignored: not a corpus file type",
    })
    summary = ingest_corpus(corpus, tmp_path / "data" / "index", embedder, log=quiet, progress=False)
    errors = dict(summary.errors)
    assert summary.documents == 2
    assert set(errors) == {"copy-of-999-1.md", "NIST.AI.999-2.pdf", "empty.md", "junk.md"}
    assert "duplicate" in errors["copy-of-999-1.md"] and "NIST.AI.999-1.md" in errors["copy-of-999-1.md"]
    assert "empty" in errors["empty.md"] and "binary" in errors["junk.md"]
    assert "PDF" in errors["NIST.AI.999-2.pdf"]
    docs = {p.doc for p in Index.load(tmp_path / "data" / "index").parents.values()}
    assert docs == {"NIST.AI.999-1", "NIST.AI.999-2"}


def test_duplicate_document_id_is_skipped(tmp_path, embedder):
    corpus = write_corpus(tmp_path / "corpus", {"NIST.AI.999-2.md": SECOND,
                                                "NIST.AI.999-2.markdown": SECOND + "\nSlightly different.\n"})
    summary = ingest_corpus(corpus, tmp_path / "data" / "index", embedder, log=quiet, progress=False)
    assert summary.documents == 1
    assert [f for f, _ in summary.errors] == ["NIST.AI.999-2.md"]  # sorted: .markdown is read first
    assert "duplicate document id" in summary.errors[0][1]


def test_nothing_readable_or_no_corpus_is_an_ingest_error(tmp_path, embedder):
    with pytest.raises(IngestError, match="does not exist"):
        ingest_corpus(tmp_path / "missing", tmp_path / "index", embedder, log=quiet, progress=False)
    corpus = write_corpus(tmp_path / "bad", {"empty.md": b""})
    with pytest.raises(IngestError, match="empty"):
        ingest_corpus(corpus, tmp_path / "index", embedder, log=quiet, progress=False)
    assert not (tmp_path / "index").exists()


def test_interrupted_write_leaves_the_old_index(tmp_path, embedder, monkeypatch):
    corpus = write_corpus(tmp_path / "corpus", {"NIST.AI.999-2.md": SECOND})
    index_dir = tmp_path / "data" / "index"
    ingest_corpus(corpus, index_dir, embedder, log=quiet, progress=False)
    before = {p.name: p.read_bytes() for p in index_dir.iterdir()}

    write_corpus(corpus, {"NIST.AI.999-1.md": FIXTURE})

    def boom(*_args, **_kwargs):
        raise KeyboardInterrupt  # the user pressed Ctrl-C while the new index was being written

    monkeypatch.setattr(ingest_module, "write_dense", boom)
    with pytest.raises(KeyboardInterrupt):
        ingest_corpus(corpus, index_dir, embedder, log=quiet, progress=False)
    assert {p.name: p.read_bytes() for p in index_dir.iterdir()} == before
    assert sorted(p.name for p in index_dir.parent.iterdir()) == ["embcache", "index"]  # no temp dir left
    assert {p.doc for p in Index.load(index_dir).parents.values()} == {"NIST.AI.999-2"}

    monkeypatch.undo()
    summary = ingest_corpus(corpus, index_dir, embedder, log=quiet, progress=False)
    assert summary.documents == 2 and summary.embedded == 0  # the interrupted run's vectors were cached


def test_real_pdf_ingests_with_pages(tmp_path, embedder):
    pdf = SHARED_CORPUS / "pdf" / "NIST.AI.100-1.pdf"
    if not pdf.is_file():
        pytest.skip("shared corpus PDF not present")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / pdf.name).symlink_to(pdf)
    summary = ingest_corpus(corpus, tmp_path / "data" / "index", embedder, log=quiet, progress=False)
    assert summary.documents == 1 and not summary.errors
    index = Index.load(tmp_path / "data" / "index")
    pages = [p.page for p in index.parents.values()]
    assert all(isinstance(p, int) and 1 <= p <= 48 for p in pages) and len(set(pages)) > 30
    assert not any(c.text.split("\n", 1)[1].strip().startswith("NIST AI 100-1 AI RMF 1.0") for c in index.children)


# ---------------------------------------------------------------------------------------------
# Commands

def test_ingest_command_prints_summary_and_errors(tmp_path, runtime):
    from nistchat.cli import main
    from nistchat.engine.runtime import Runtime

    corpus = write_corpus(tmp_path / "corpus", {"NIST.AI.999-1.md": FIXTURE, "empty.md": b""})
    rt = Runtime(make_settings(tmp_path, data_dir=tmp_path / "data"), models=runtime.models)
    result = CliRunner().invoke(main, ["ingest", "--corpus", str(corpus), "--quiet"], obj=rt)
    assert result.exit_code == 0, result.output
    for text in ("documents: 1", "parents:", "children:", "tables:    2", "figures: 1", "cache hits: 0",
                 "empty.md: empty file"):
        assert text in result.output
    assert Index.exists(tmp_path / "data" / "index")
    again = CliRunner().invoke(main, ["ingest", "--corpus", str(corpus), "--quiet"], obj=rt)
    assert again.exit_code == 0 and "up to date" in again.output

    missing = CliRunner().invoke(main, ["ingest", "--corpus", str(tmp_path / "nope")], obj=rt)
    assert missing.exit_code == 1 and "does not exist" in missing.output and "Traceback" not in missing.output


def test_corpus_download_without_network_says_so(tmp_path, monkeypatch):
    from nistchat.cli import main
    from nistchat.engine.corpus import download
    from nistchat.engine.runtime import Runtime

    assert len(download.OFFICIAL_PDFS) == 7  # the seven publications, one without a direct address
    assert sum(url is None for url in download.OFFICIAL_PDFS.values()) == 1
    unreachable = {"NIST.AI.100-1.pdf": "http://127.0.0.1:9/NIST.AI.100-1.pdf", "Concept-Note.pdf": None}
    monkeypatch.setattr(download, "OFFICIAL_PDFS", unreachable)
    rt = Runtime(make_settings(tmp_path, data_dir=tmp_path / "data"))
    result = CliRunner().invoke(main, ["corpus", "download", "--dest", str(tmp_path / "pdfs"), "--timeout", "2"], obj=rt)
    assert result.exit_code == 1
    assert "FAIL NIST.AI.100-1.pdf: cannot reach http://127.0.0.1:9/" in result.output
    assert "FAIL Concept-Note.pdf: no direct address" in result.output
    assert "Traceback" not in result.output and not list((tmp_path / "pdfs").iterdir())


def test_tokenizer_joins_hyphenated_words():
    """PDF conversion writes "postdeployment"; users type "post-deployment": both must meet."""
    tokens = bm25_tokenize("post-deployment monitoring of third-party DP-SGD")
    assert {"post-deployment", "post", "deployment", "postdeployment", "thirdparty", "dp-sgd", "dpsgd"} <= set(tokens)
    assert "postdeployment" in bm25_tokenize("postdeployment")

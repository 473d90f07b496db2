"""Shared fixtures. Everything real: the real corpus, real models under data/models, a real
index built once per session under data/test/ (kept between runs so the embedding cache makes
re-runs fast), one Runtime per session so models load once."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nistchat.config import load_settings

REPO = Path(__file__).resolve().parents[1]
CORPUS_ROOT = Path(os.environ.get("NISTCHAT_CORPUS_DIR", REPO.parent / "shared" / "corpus" / "markdown")).resolve()
SHARED_CORPUS = CORPUS_ROOT.parent  # holds markdown/, pdf/, auto-converted/
MODELS_DIR = Path(os.environ.get("NISTCHAT_MODELS_DIR", REPO / "data" / "models")).resolve()
TEST_DATA = REPO / "data" / "test"
TEST_READER = os.environ.get("NISTCHAT_TEST_GGUF", "qwen2.5-coder-0.5b")


# For tests about plumbing (queues, processes, stored runs), not what the reader says: short prompts,
# short answers and no checks keep a real answer to a few seconds on 2 cores.
SHORT_ANSWERS = {"answer": {"max_tokens": 60, "context_tokens": 600},
                 "verify": {"mode": "never", "weak_retrieval": False, "follow_ups": False}}


def make_settings(tmp_path: Path | None = None, **overrides):
    """Settings for tests: embedded backend, the test reader, models from data/models."""
    base = {
        "data_dir": TEST_DATA,
        "corpus_dir": CORPUS_ROOT,
        "models_root": MODELS_DIR,
        "backend": "embedded",
        "gguf": TEST_READER,
        "second_embedder": "",  # tests about the second embedder turn it on themselves
        "secret_key": "test",
    }
    if tmp_path is not None:
        base["instance_dir"] = tmp_path / "instance"
        (tmp_path / "instance").mkdir(parents=True, exist_ok=True)
    base.update(overrides)
    instance = base.pop("instance_dir", TEST_DATA / "instance")
    return load_settings(instance_dir=instance, overrides=base, environ={})


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS_ROOT.is_dir():
        pytest.skip(f"corpus not found at {CORPUS_ROOT} (set NISTCHAT_CORPUS_DIR)")
    return CORPUS_ROOT


@pytest.fixture(scope="session")
def runtime(corpus_dir):
    """One engine for the whole session, over the real corpus index (built if missing or stale)."""
    from nistchat.engine.index.build import ingest_corpus
    from nistchat.engine.runtime import Runtime

    settings = make_settings()
    rt = Runtime(settings)
    ingest_corpus(corpus_dir, settings.index_dir, rt.models.get("embedder"), log=lambda *_: None, progress=False)
    rt.reload_index()
    return rt


@pytest.fixture(scope="session")
def index(runtime):
    return runtime.index


# A made-up eighth publication: no code or alias table knows it, only its file.
EXTRA_DOC = """# NIST AI 999-9 Guidance on Widget Assurance

## 1. Scope

Widget assurance covers how an organization tests, documents and monitors the widgets it deploys.
Each widget is reviewed before release and again every quarter.
"""


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory, corpus_dir, light_runtime) -> Path:
    """A data dir whose real index has two documents: the corpus's smallest (the CI Profile
    concept note) and EXTRA_DOC, built by the real ingestion with the real embedder."""
    from nistchat.engine.index.build import ingest_corpus

    root = tmp_path_factory.mktemp("tiny-index")
    corpus = root / "corpus"
    corpus.mkdir()
    shutil.copy(corpus_dir / "NIST.AI.CI-Profile-Concept-Note.md", corpus)
    (corpus / "NIST.AI.999-9.md").write_text(EXTRA_DOC, encoding="utf-8")
    ingest_corpus(corpus, root / "index", light_runtime.models.get("embedder"), log=lambda *_: None, progress=False)
    return root


@pytest.fixture(scope="session")
def tiny_index(tiny_data):
    from nistchat.engine.index.index import Index

    return Index.load(tiny_data / "index")


@pytest.fixture(scope="session")
def tiny_runtime(tiny_data, light_runtime):
    """A real Runtime over the tiny index, sharing light_runtime's models (loaded once)."""
    from nistchat.engine.runtime import Runtime

    return Runtime(make_settings(data_dir=tiny_data), light_runtime.models)


@pytest.fixture
def parent():
    """Factory for hand-built parents, each in a section of its own: parent(id, text, kind, doc)."""
    from nistchat.engine.types import Parent

    def make(pid: str, text: str, kind: str = "prose", doc: str = "D") -> Parent:
        return Parent(pid, doc, "T", ["S", pid], kind, text)

    return make


# -- web fixtures (flaskr pattern); the helpers they use are in web_support.py
@pytest.fixture(scope="session")
def light_runtime(tmp_path_factory):
    """A real Runtime over an empty data dir: direct answers work, anything needing retrieval
    fails fast with the engine's "no index" error (so route tests never run the LLM)."""
    from nistchat.engine.runtime import Runtime

    return Runtime(make_settings(data_dir=tmp_path_factory.mktemp("no-index")))


# -- the database engines. A test module (or test) marked `both_engines` runs each test that uses
# the database (through `app`, `database_url` or `db_engine`) on SQLite and on PostgreSQL.
ENGINES = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc):
    chosen = any("db_engine" in str(m.args[0]) for m in metafunc.definition.iter_markers("parametrize"))
    if "db_engine" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_engines") and not chosen:
        metafunc.parametrize("db_engine", ENGINES, indirect=True)


@pytest.fixture
def db_engine(request) -> str:
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def postgres():
    """One real PostgreSQL server for the session (tests/postgres_server.py), with a template
    database migrated to head that each test's database is copied from."""
    from .postgres_server import PostgresServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server programs not found (Debian: apt-get install postgresql)")
    server = PostgresServer(bindir).start()
    try:
        server.template = server.create_database()
        migrate_empty(server.url(server.template))
        yield server
    finally:
        server.stop()


def migrate_empty(database_url: str) -> None:
    """Bring an empty database to head with the real migrations, leaving no connection open."""
    from nistchat.app import create_app, upgrade_database
    from nistchat.extensions import db

    app = create_app({"SETTINGS": make_settings(database_url=database_url)})
    upgrade_database(app)
    with app.app_context():
        db.engine.dispose()


def _close_apps() -> None:
    from .web_support import close_apps  # web_support imports make_settings from here
    close_apps()


@pytest.fixture(autouse=True)
def closed_apps():
    """Every app a test built is closed at its end, whatever database it used."""
    yield
    _close_apps()


@pytest.fixture
def database_url(request, db_engine):
    """"" (the SQLite file in the test's instance dir) or a fresh PostgreSQL database at head."""
    if db_engine == "sqlite":
        yield ""
        return
    server = request.getfixturevalue("postgres")
    name = server.checkout()
    yield server.url(name)
    _close_apps()  # before the database goes to the next test
    try:
        server.checkin(name)
    except Exception:  # a test that changed its database's schema: not reused
        server.drop_database_later(name)


@pytest.fixture
def blank_database_url(request, db_engine):
    """"" (a new SQLite file) or a new, empty PostgreSQL database: for tests that migrate it."""
    if db_engine == "sqlite":
        yield ""
        return
    server = request.getfixturevalue("postgres")
    name = server.create_database()
    yield server.url(name)
    _close_apps()
    server.drop_database_later(name)


@pytest.fixture
def app(tmp_path, light_runtime, database_url):
    from .web_support import build_app  # web_support imports make_settings from here

    return build_app(tmp_path, light_runtime, database_url=database_url)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()

"""One typed configuration: defaults < instance/config.toml < NISTCHAT_* environment < overrides.

Each setting is a field of one of the dataclasses below, with its one default. The TOML file has a
table per section (`[backends]`, `[retrieval]`, `[answer]`, `[verify]`, `[refusal]`, `[risk]`,
`[queue]`, `[web]`) and the paths at the top. Everything is checked when settings load: an
unknown key, a wrong type or a value outside its choices is a `ConfigError` that names the key,
so a typo fails at start-up instead of on the first question. Plain Python (no Flask): the
engine, the CLI and the web app read the same object. `instance/config.example.toml` is written
from these classes (`python -m nistchat.config > instance/config.example.toml`; a test checks it).
"""
from __future__ import annotations

import dataclasses
import os
import sys
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# Embedded reader choices; both are provisioned offline by `nistchat models install`.
GGUF_MODELS = {
    "qwen2.5-coder-1.5b": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
}
# The embedded readers that judge a claim at least as well inside the answer's prompt as with the
# passage alone (verify.context = "auto"); the 0.5B there agrees with changed facts more often.
JUDGES_IN_PROMPT = {GGUF_MODELS["qwen2.5-coder-1.5b"]}


class ConfigError(ValueError):
    """The site configuration cannot be used; the message names the key and why."""


def setting(default, doc: str, *, choices: tuple = (), env: str = "", minimum: float | None = None):
    """A field with its one default, a line of documentation, and what load-time checks apply."""
    meta = {"doc": doc, "choices": choices, "env": env, "minimum": minimum}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def section(kind, doc: str):
    return field(default_factory=kind, metadata={"doc": doc})


@dataclass
class BackendSettings:
    backend: str = setting("auto", "auto: Ollama when it answers and has reader_model, else the OpenAI-compatible "
                                   "server at openai_base_url (when set) if it lists openai_model, else embedded",
                           choices=("auto", "ollama", "openai", "embedded"), env="NISTCHAT_BACKEND")
    ollama_host: str = setting("http://127.0.0.1:11434", "Ollama server", env="OLLAMA_HOST")
    reader_model: str = setting("qwen2.5:3b", "Ollama reader", env="NISTCHAT_READER_MODEL")
    verifier_model: str = setting("bespoke-minicheck", "Ollama verifier (the reader judges if absent)",
                                  env="NISTCHAT_VERIFIER_MODEL")
    openai_base_url: str = setting("", "OpenAI-compatible server's API root, e.g. http://127.0.0.1:8080/v1 "
                                       "(vLLM, llama-server; docs/reader-servers.md)", env="NISTCHAT_OPENAI_BASE_URL")
    openai_model: str = setting("", "the reader's model id as the server's /v1/models lists it",
                                env="NISTCHAT_OPENAI_MODEL")
    openai_verifier_model: str = setting("", "a MiniCheck-style Yes/No model on that server; empty: the reader judges",
                                         env="NISTCHAT_OPENAI_VERIFIER_MODEL")
    openai_api_key_env: str = setting("NISTCHAT_OPENAI_API_KEY", "environment variable holding the server's API "
                                                                  "key (never logged or shown)")
    openai_api_key_file: Path | None = setting(None, "else a file whose first line is the key (relative: to instance/)")
    ollama_embedder: str = setting("", "e.g. bge-m3; empty keeps the local embedder", env="NISTCHAT_OLLAMA_EMBEDDER")
    embedder: str = setting("all-MiniLM-L6-v2", "sentence-transformers name or local folder", env="NISTCHAT_EMBEDDER")
    reranker: str = setting("cross-encoder/ms-marco-MiniLM-L-6-v2", "CrossEncoder name or folder; none disables",
                            env="NISTCHAT_RERANKER")
    gguf: str = setting("qwen2.5-coder-1.5b", "embedded reader: qwen2.5-coder-1.5b, qwen2.5-coder-0.5b or a .gguf path",
                        env="NISTCHAT_GGUF")
    timeout_s: float = setting(120.0, "longest stall of a model call between two tokens (and to the first token "
                                      "of a short prompt)", env="NISTCHAT_TIMEOUT_S", minimum=0.001)
    first_token_floor_s: float = setting(60.0, "the wait for an answer's first token is the prompt's tokens at the "
                                               "reader's measured prefill rate, times 3, but at least this",
                                         minimum=0.001)
    first_token_ceiling_s: float = setting(900.0, "... and at most this", minimum=0.001)
    n_ctx: int = setting(4096, "llama.cpp context window", minimum=512)
    threads: int = setting(0, "llama.cpp threads; 0 = all cores but those other processes keep busy, "
                                 "chosen before each answer (backends/contention.py)", minimum=0)
    query_threads: int = setting(1, "torch threads for embedding questions (0 = all cores); ingest uses all cores",
                                 minimum=0)
    reader_process: str = setting("worker", "worker: llama.cpp in a child process (a crash costs one answer)",
                                  choices=("worker", "inprocess"), env="NISTCHAT_READER_PROCESS")


@dataclass
class RewriteSettings:
    """Query rewriting with the local reader (HyDE, query_rewrite.py) when first-pass retrieval is weak."""
    enabled: bool = setting(False, "search a short passage the reader writes alongside the question")
    below: float = setting(0.6199, "rewrite only when the top dense score is below this (the refusal "
                                   "gate's weak line)")
    max_tokens: int = setting(64, "longest rewrite", minimum=8)
    deadline_s: float = setting(2.5, "the rewrite stops here and keeps what it has", minimum=0.1)
    bm25: bool = setting(True, "search the rewrite with BM25 too (else dense only)")


@dataclass
class TranslateSettings:
    """A question typed in Spanish, German or French searched as the reader's English translation
    (retrieval/translate.py), when the reader is idle."""
    enabled: bool = setting(True, "translate such questions for the search (off: searched as written)")
    max_tokens: int = setting(64, "longest translation", minimum=8)
    deadline_s: float = setting(8.0, "seconds for the translation once its prompt is read at the reader's measured rate; "
                                     "no whole translation by then: searched as written", minimum=0.1)


@dataclass
class RetrievalSettings:
    dense_depth: int = setting(50, "children taken from FAISS (without the second embedder)", minimum=1)
    bm25_depth: int = setting(50, "children taken from BM25 (without the second embedder)", minimum=1)
    depth_with_second: int = setting(100, "children each list gives RRF while the second embedder's list is in "
                                          "use (chosen on dev: docs/decisions.md)", minimum=1)
    rrf_k: int = setting(60, "reciprocal-rank fusion constant", minimum=1)
    weights: dict = setting({"dense": 1.0, "bm25": 1.0, "exact": 1.0, "dense2": 4.0, "rewrite_dense": 1.0,
                             "rewrite_bm25": 1.0},
                            "RRF weight of each ranked list (dense2 chosen on dev: docs/decisions.md)")
    exact_depth: int = setting(20, "children holding a query identifier verbatim (a third RRF list)", minimum=0)
    acronym_max_df: float = setting(0.15, "acronyms in more children than this share say nothing")
    definition_max_df: float = setting(0.5, "... unless the question asks what one stands for")
    parent_decay: float = setting(0.0, "weight of a parent's 2nd, 3rd... matching child (0 = best child only)")
    rerank_top_n: int = setting(20, "fused candidates the cross-encoder sees", minimum=1)
    second_embedder: str = setting("embeddinggemma-300m", "its dense list is fused too, once `nistchat serve` has "
                                   "built its vectors in the background (empty: off; engine/index/second.py)",
                                   env="NISTCHAT_SECOND_EMBEDDER")
    scope_named_docs: bool = setting(True, "a question naming documents searches only them")
    doc_aliases: dict = setting({}, "doc id -> extra names users call it by")
    max_per_section: int = setting(5, "passages from one heading path", minimum=1)
    max_per_figure: int = setting(1, "figure passages from one heading path", minimum=1)
    join_split_prose: bool = setting(True, "a hit on the prose parent next to a chosen one joins its passage")
    weighted_budget: bool = setting(True, "share the context budget by evidence weight (off: equal shares)")
    trace_depth: int = setting(30, "candidates per stage kept in the trace", minimum=1)
    rewrite: RewriteSettings = section(RewriteSettings, "query rewriting with the local reader")
    translate: TranslateSettings = section(TranslateSettings, "questions in other languages searched in English")


@dataclass
class AnswerSettings:
    k: int = setting(6, "passages handed to the reader", minimum=1)
    context_tokens: int = setting(1800, "passage budget in the reader's prompt", env="NISTCHAT_CONTEXT_TOKENS",
                                  minimum=100)
    max_tokens: int = setting(320, "longest answer", minimum=1)
    temperature: float = setting(0.0, "0 = greedy: the same question and passages give the same answer", minimum=0)
    history_chars: int = setting(1000, "conversation memory sent to the reader (characters)", minimum=0)
    max_question_chars: int = setting(2000, "longer questions are refused before any model call", minimum=1)


@dataclass
class VerifySettings:
    mode: str = setting("high", "high: HIGH-risk answers (and weak retrieval) · always · never",
                        choices=("high", "always", "never"))
    weak_retrieval: bool = setting(True, "also verify answers whose retrieval score is under the median answerable one")
    follow_ups: bool = setting(True, "also verify follow-up answers (a turn resolved against the conversation) and "
                                     "retry an unsupported one")
    per_sentence: int = setting(2, "passages tried per sentence", minimum=1)
    max_checks: int = setting(10, "verifier calls per answer (each is a model call)", minimum=0)
    doc_chars: int = setting(1800, "passage length sent per check", minimum=100)
    order: str = setting("passage", "passage: judge calls grouped by passage, so llama.cpp reads each passage once "
                                    "per round; sentence: each sentence's tries in turn", choices=("passage", "sentence"))
    context: str = setting("auto", "answer: a reader acting as judge is asked inside its answer's own prompt, so "
                                   "the passages are read once; passage: each check sends its passage alone (always "
                                   "so for a separate verifier model); auto: answer for the readers measured to judge "
                                   "well there (the 1.5B), else passage", choices=("auto", "answer", "passage"))


@dataclass
class RefusalSettings:
    feature: str = setting("dense_max", "the retrieval score the gate compares")
    threshold: float = setting(0.0, "refuse below this score alone (0: off; scripts/calibrate_refusal.py "
                                    "prints the value that wrongly refuses no dev question)")
    unknown_term_threshold: float = setting(0.6199, "refuse a question naming something the corpus never mentions "
                                                    "when the score is below this")


@dataclass
class RiskSettings:
    patterns: list = setting([], "replaces the whole risk table: [{kind, pattern, list}] (empty: the built-in one)")
    patterns_extra: list = setting([], "added to the risk table: [{kind, pattern, list}]")


@dataclass
class QueueSettings:
    max_waiting: int = setting(12, "answers that may wait for the reader, all browsers together (then 503)", minimum=1)
    max_waiting_per_browser: int = setting(2, "answers one browser may have waiting (then 429)", minimum=1)
    reader_slots: int = setting(1, "answers using the reader at once: 1 for the embedded reader; a server that "
                                   "batches takes its parallel slots (docs/reader-servers.md)",
                                env="NISTCHAT_READER_SLOTS", minimum=1)
    shared: str = setting("auto", "where tickets and answers in progress live: memory (one web process), database "
                                  "(several processes on one database); auto: database on PostgreSQL, else memory",
                          choices=("auto", "memory", "database"), env="NISTCHAT_QUEUE_SHARED")
    lease_s: float = setting(15.0, "shared: a process that stops renewing its tickets and answers this long is "
                                   "taken for dead, and the line moves on without it", minimum=2)


@dataclass
class SmallTalkSettings:
    """Greetings, thanks and questions about the assistant, answered before retrieval (engine/answer/smalltalk/)."""
    enabled: bool = setting(True, "answer small talk from the catalogue at once (off: every message is searched)")
    min_score: float = setting(0.32, "a small-talk kind must score at least this (mean cosine to its nearest "
                                     "examples; chosen on the dev split: docs/decisions.md)", minimum=0)
    margin: float = setting(0.10, "... and this much above the NIST examples", minimum=0)


@dataclass
class BackgroundSettings:
    """Work the server does besides answering (the second embedder's build)."""
    yield_to_answers: bool = setting(True, "pause between batches while an answer holds or waits for the reader")
    max_pause_s: float = setting(600.0, "the longest pause at a stretch; then one batch runs (a busy office "
                                        "still finishes the build)", minimum=1)


@dataclass
class WebSettings:
    secret_key: str = setting("", "signs session cookies; empty: a random key kept in instance/secret_key",
                              env="NISTCHAT_SECRET_KEY")
    admin_password_hash: str = setting("", "empty = admin login off", env="NISTCHAT_ADMIN_PASSWORD_HASH")
    port: int = setting(8000, "`nistchat serve` port", env="NISTCHAT_PORT", minimum=1)
    ask_rate_limit: str = setting("12 per minute", "per client address, on POST /ask and /api/ask (Flask-Limiter)")
    htmx: str = setting("local", "local: nistchat/static/vendor (offline); cdn: pinned URLs with Subresource Integrity",
                        choices=("local", "cdn"))
    allowed_hosts: list = setting([], "Host names this site answers to, e.g. [\"chat.example.org\"]; empty: any "
                                      "(a warning at start)")
    proxy_count: int = setting(0, "reverse proxies in front whose X-Forwarded-* headers are trusted (0: none)",
                               minimum=0)
    session_cookie_secure: bool = setting(False, "send the session cookie over HTTPS only (set it behind TLS)",
                                          env="NISTCHAT_SESSION_COOKIE_SECURE")
    admin_idle_minutes: float = setting(30.0, "an admin login unused this long is logged out", minimum=1)
    admin_lifetime_hours: float = setting(12.0, "an admin login ends this long after it began, used or not",
                                          minimum=0.1)
    login_lockout_after: int = setting(5, "failed admin logins from one address before it is locked out", minimum=1)
    login_lockout_s: float = setting(30.0, "first lockout; each further failure doubles it (at most an hour)",
                                     minimum=1)
    history_page_size: int = setting(20, "conversations or hits per History page", minimum=1)
    heartbeat_s: float = setting(10.0, "seconds between keep-alives on a silent answer stream", minimum=0.1)
    p80_min_samples: int = setting(5, "answers per risk class before the progress bar uses the measured P80", minimum=1)
    p80_default_low_s: float = setting(30.0, "progress bar length before then, LOW-risk questions (seconds)")
    p80_default_high_s: float = setting(60.0, "... HIGH-risk questions (verified sentence by sentence)")


@dataclass
class Settings:
    instance_dir: Path = setting(PROJECT_ROOT / "instance", "site config and the SQLite database",
                                 env="NISTCHAT_INSTANCE_DIR")
    data_dir: Path = setting(PROJECT_ROOT / "data", "built indexes (index/) and models (models/)",
                             env="NISTCHAT_DATA_DIR")
    corpus_dir: Path | None = setting(None, "the NIST documents (markdown or PDF); default data_dir/corpus",
                                      env="NISTCHAT_CORPUS_DIR")
    models_root: Path | None = setting(None, "embedded model files; default data_dir/models", env="NISTCHAT_MODELS_DIR")
    database_url: str = setting("", "SQLAlchemy URL of the database, e.g. postgresql+psycopg://nistchat@127.0.0.1/"
                                    "nistchat; empty: the SQLite file instance_dir/nistchat.sqlite3",
                                env="NISTCHAT_DATABASE_URL")
    backends: BackendSettings = section(BackendSettings, "model backends")
    retrieval: RetrievalSettings = section(RetrievalSettings, "retrieval (nistchat/engine/retrieval/retriever.py)")
    answer: AnswerSettings = section(AnswerSettings, "the answer pipeline (nistchat/engine/answer/pipeline.py)")
    verify: VerifySettings = section(VerifySettings, "sentence verification (nistchat/engine/verification/verify.py)")
    refusal: RefusalSettings = section(RefusalSettings, "the refusal gate before generation (nistchat/engine/answer/refusal.py)")
    risk: RiskSettings = section(RiskSettings, "risk classes of questions (nistchat/engine/answer/risk.py)")
    queue: QueueSettings = section(QueueSettings, "the queue in front of the reader")
    small_talk: SmallTalkSettings = section(SmallTalkSettings, "small talk answered before retrieval")
    background: BackgroundSettings = section(BackgroundSettings, "background work of the server")
    web: WebSettings = section(WebSettings, "the web app")

    @property
    def corpus(self) -> Path:
        return self.corpus_dir or self.data_dir / "corpus"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"

    @property
    def models_dir(self) -> Path:
        return self.models_root or self.data_dir / "models"

    @property
    def gguf_path(self) -> Path:
        name = GGUF_MODELS.get(self.backends.gguf)
        return self.models_dir / name if name else Path(self.backends.gguf).expanduser()

    @property
    def db_path(self) -> Path:
        return self.instance_dir / "nistchat.sqlite3"

    @property
    def database_uri(self) -> str:
        """The URL the app connects to: database_url, else the SQLite file in instance/."""
        return self.database_url or f"sqlite:///{self.db_path}"

    @property
    def shared_queue(self) -> bool:
        """Whether tickets and answers in progress go through the database (queue.shared)."""
        if self.queue.shared == "auto":
            return self.database_uri.startswith("postgresql")
        return self.queue.shared == "database"

    @property
    def backup_dir(self) -> Path:
        """Where `nistchat serve` keeps the backup it takes before upgrading a database with data."""
        return self.instance_dir / "backups"

    @property
    def questions_path(self) -> Path:
        return self.instance_dir / "questions_config.json"


# -- loading and checking

def _hints(kind) -> dict:
    return typing.get_type_hints(kind)


def _is_section(kind) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


def _coerce(kind, value, key: str, meta: dict, base: Path):
    """`value` as the field's type; strings (from the environment) are parsed."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):  # only `Path | None` here
        if value in (None, ""):
            return None
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    if kind is Path:
        if not isinstance(value, (str, Path)):
            raise ConfigError(f"setting {key!r} must be a path, got {value!r}")
        path = Path(value).expanduser()
        return path if path.is_absolute() else (base / path).resolve()
    if kind is bool:
        if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return value.lower() in ("1", "true", "yes", "on")
        if not isinstance(value, bool):
            raise ConfigError(f"setting {key!r} must be true or false, got {value!r}")
        return value
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(f"setting {key!r} must be a number, got {value!r}")
        try:
            if kind is float:
                number = float(value)
            elif isinstance(value, float):
                number = int(value) if value.is_integer() else None
            else:
                number = int(value)
        except ValueError:
            number = None
        if number is None:
            raise ConfigError(f"setting {key!r} must be {'a whole number' if kind is int else 'a number'}, got {value!r}")
        if meta.get("minimum") is not None and number < meta["minimum"]:
            raise ConfigError(f"setting {key!r} must be at least {meta['minimum']}, got {number}")
        return number
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"setting {key!r} must be a string, got {value!r}")
        if meta.get("choices") and value not in meta["choices"]:
            raise ConfigError(f"setting {key!r} must be one of {', '.join(meta['choices'])}, got {value!r}")
        return value
    for container in (dict, list):
        if kind is container:
            if not isinstance(value, container):
                raise ConfigError(f"setting {key!r} must be a {'table' if container is dict else 'list'}, got {value!r}")
            return value
    raise ConfigError(f"setting {key!r} has an unsupported type {kind!r}")  # pragma: no cover - a schema bug


def _build(kind, data: dict, prefix: str, base: Path, start):
    """A copy of the section `start` (of type `kind`) updated by `data`, each value checked."""
    if not isinstance(data, dict):
        raise ConfigError(f"[{prefix.rstrip('.')}] must be a table, got {data!r}")
    known = {f.name: f for f in dataclasses.fields(kind)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        where = f"in [{prefix.rstrip('.')}]" if prefix else "at the top level"
        homes = [key for key, _f, _t in schema() if key.rsplit(".", 1)[-1] == unknown[0]]
        hint = f"; it belongs under [{homes[0].rsplit('.', 1)[0]}]" if len(homes) == 1 and "." in homes[0] else \
            f"; known: {', '.join(known)}"
        raise ConfigError(f"unknown setting {prefix}{unknown[0]!s} ({where}{hint})")
    hints = _hints(kind)
    values = {}
    for name, f in known.items():
        current = getattr(start, name)
        if name not in data:
            values[name] = current
        elif _is_section(hints[name]):
            values[name] = _build(hints[name], data[name], f"{prefix}{name}.", base, current)
        else:
            values[name] = _coerce(hints[name], data[name], prefix + name, f.metadata, base)
    return kind(**values)


def updated(obj, changes: dict, label: str = ""):
    """A copy of a settings object (or one section) with `changes` applied and checked; nested
    sections may be given as tables, e.g. updated(retrieval, {"rewrite": {"enabled": False}})."""
    return _build(type(obj), changes, f"{label}." if label else "", Path.cwd(), obj)


def schema(kind=Settings, prefix: str = ""):
    """(dotted key, field, type) for every setting, sections depth-first."""
    hints = _hints(kind)
    for f in dataclasses.fields(kind):
        if _is_section(hints[f.name]):
            yield from schema(hints[f.name], f"{prefix}{f.name}.")
        else:
            yield prefix + f.name, f, hints[f.name]


def nest(dotted: dict) -> dict:
    """{"backends.gguf": x} -> {"backends": {"gguf": x}}."""
    out: dict = {}
    for key, value in dotted.items():
        *parents, leaf = key.split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def _overrides(overrides: dict) -> dict:
    """Overrides as nested tables. Keys may be dotted ("backends.gguf") or a setting's own name
    when it is unique ("gguf"), which keeps scripts and tests short."""
    by_leaf: dict[str, list[str]] = {}
    for key, _f, _t in schema():
        by_leaf.setdefault(key.rsplit(".", 1)[-1], []).append(key)
    dotted = {}
    for key, value in overrides.items():
        if "." not in key and key not in {f.name for f in dataclasses.fields(Settings)}:
            paths = by_leaf.get(key, [])
            if len(paths) != 1:
                raise ConfigError(f"unknown setting {key!r}" if not paths else
                                  f"setting {key!r} is ambiguous: say {' or '.join(paths)}")
            key = paths[0]
        dotted[key] = value
    return nest(dotted)


def load_settings(instance_dir: Path | None = None, overrides: dict | None = None,
                  environ: dict | None = None) -> Settings:
    """Defaults, then instance/config.toml, then the environment, then `overrides`, each checked."""
    environ = os.environ if environ is None else environ
    instance_dir = Path(instance_dir or environ.get("NISTCHAT_INSTANCE_DIR") or PROJECT_ROOT / "instance")
    settings = Settings(instance_dir=instance_dir)
    site = instance_dir / "config.toml"
    if site.exists():
        try:
            data = tomllib.loads(site.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{site}: not valid TOML ({exc})") from None
        try:
            settings = _build(Settings, data, "", instance_dir, settings)
        except ConfigError as exc:
            raise ConfigError(f"{site}: {exc}") from None
    from_env = {key: environ[f.metadata["env"]] for key, f, _t in schema()
                if f.metadata.get("env") and f.metadata["env"] != "NISTCHAT_INSTANCE_DIR" and environ.get(f.metadata["env"])}
    settings = _build(Settings, nest(from_env), "", Path.cwd(), settings)
    return _build(Settings, _overrides(overrides or {}), "", Path.cwd(), settings)


def example_toml() -> str:
    """instance/config.example.toml, written from the dataclasses (every key, its default, its doc)."""
    import json

    def show(value) -> str:
        if isinstance(value, Path):
            try:
                return json.dumps("../" + str(value.relative_to(PROJECT_ROOT)))
            except ValueError:
                return json.dumps(str(value))
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {show(v)}" for k, v in value.items()) + " }" if value else "{}"
        if isinstance(value, (list, str)):
            return json.dumps(value)
        return repr(value)

    lines = ["# NISTChat site configuration: copy to instance/config.toml and uncomment what you change.",
             "# Precedence: built-in defaults < this file < NISTCHAT_* environment variables.",
             "# Relative paths are resolved against the instance/ folder. Unknown keys are errors.",
             "# Generated from nistchat/config.py: python -m nistchat.config > instance/config.example.toml", ""]
    defaults = Settings()
    current = None
    for key, f, _t in schema():
        table, _, name = key.rpartition(".")
        if key.startswith("instance_dir"):
            continue
        if table != current:
            current = table
            doc = ""
            owner = defaults
            for part in table.split(".") if table else []:
                doc = next(x.metadata.get("doc", "") for x in dataclasses.fields(owner) if x.name == part)
                owner = getattr(owner, part)
            lines += ["", f"# [{table}]  # {doc}" if table else "# (top level)"]
        value = defaults
        for part in key.split("."):
            value = getattr(value, part)
        env = f"  (env {f.metadata['env']})" if f.metadata.get("env") else ""
        choices = f"  [{' | '.join(f.metadata['choices'])}]" if f.metadata.get("choices") else ""
        shown = show(value) if value is not None else '""'
        lines.append(f"# {name} = {shown}    # {f.metadata.get('doc', '')}{choices}{env}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(example_toml())

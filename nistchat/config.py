"""One place for configuration: defaults < instance/config.toml < NISTCHAT_* environment.

Plain Python (no Flask) so the engine, the CLI and the web app read the same values.
"""
from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# Embedded reader choices; both are provisioned offline by `nistchat models install`.
GGUF_MODELS = {
    "qwen2.5-coder-1.5b": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
}


class ConfigError(ValueError):
    """The site configuration cannot be read; the message says where and why."""


@dataclass
class Settings:
    instance_dir: Path = PROJECT_ROOT / "instance"
    data_dir: Path = PROJECT_ROOT / "data"
    corpus_dir: Path | None = None  # default: data_dir / "corpus"
    models_root: Path | None = None  # default: data_dir / "models"
    backend: str = "auto"  # auto | ollama | embedded
    ollama_host: str = "http://127.0.0.1:11434"
    reader_model: str = "qwen2.5:3b"  # Ollama reader
    verifier_model: str = "bespoke-minicheck"  # Ollama verifier
    ollama_embedder: str = ""  # e.g. "bge-m3"; empty keeps the local embedder
    embedder: str = "all-MiniLM-L6-v2"  # name or local path of a sentence-transformers model
    reranker: str = "cross-encoder/ms-marco-MiniLM-L-6-v2"  # name or local path; "none" disables
    gguf: str = "qwen2.5-coder-1.5b"  # key of GGUF_MODELS or a path to a .gguf file
    secret_key: str = "dev-only-change-me"
    admin_password_hash: str = ""
    port: int = 8000
    timeout_s: float = 120.0  # per model call
    max_question_chars: int = 2000
    context_tokens: int = 1800  # passage budget: 1500 -> 1800 measured hit@6 0.868 -> 0.908 for ~+1.2 s to first token
    n_ctx: int = 4096
    threads: int = 0  # llama.cpp threads; 0 = all cores
    reader_process: str = "worker"  # worker: llama.cpp in a child process (a crash costs one answer) | inprocess
    queue_max_waiting: int = 12  # answers that may wait for the reader, all browsers together (then 503)
    queue_max_waiting_per_browser: int = 2  # answers one browser may have waiting (then 429)
    extra: dict = field(default_factory=dict)

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
        name = GGUF_MODELS.get(self.gguf)
        return self.models_dir / name if name else Path(self.gguf).expanduser()

    @property
    def db_path(self) -> Path:
        return self.instance_dir / "nistchat.sqlite3"

    @property
    def questions_path(self) -> Path:
        return self.instance_dir / "questions_config.json"

    def as_flask_config(self) -> dict:
        """Upper-case keys for app.config, plus the settings object itself."""
        values = {f.name.upper(): getattr(self, f.name) for f in dataclasses.fields(self)}
        values["SETTINGS"] = self
        return values


_PATH_FIELDS = {"instance_dir", "data_dir", "corpus_dir", "models_root"}
_ENV = {
    "NISTCHAT_DATA_DIR": "data_dir",
    "NISTCHAT_CORPUS_DIR": "corpus_dir",
    "NISTCHAT_MODELS_DIR": "models_root",
    "NISTCHAT_BACKEND": "backend",
    "OLLAMA_HOST": "ollama_host",
    "NISTCHAT_READER_MODEL": "reader_model",
    "NISTCHAT_VERIFIER_MODEL": "verifier_model",
    "NISTCHAT_OLLAMA_EMBEDDER": "ollama_embedder",
    "NISTCHAT_EMBEDDER": "embedder",
    "NISTCHAT_RERANKER": "reranker",
    "NISTCHAT_GGUF": "gguf",
    "NISTCHAT_SECRET_KEY": "secret_key",
    "NISTCHAT_ADMIN_PASSWORD_HASH": "admin_password_hash",
    "NISTCHAT_PORT": "port",
    "NISTCHAT_TIMEOUT_S": "timeout_s",
    "NISTCHAT_CONTEXT_TOKENS": "context_tokens",
    "NISTCHAT_READER_PROCESS": "reader_process",
}


_KINDS = {f.name: f.type for f in dataclasses.fields(Settings)}


def _coerce(name: str, value, base: Path):
    if name not in _KINDS:
        raise ConfigError(f"unknown setting {name!r}")
    if name in _PATH_FIELDS:
        if value in (None, ""):
            return None
        p = Path(value).expanduser()
        return p if p.is_absolute() else (base / p).resolve()
    kind = _KINDS[name]
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name!r} must be a number, got {value!r}") from None
    if name == "backend" and value not in ("auto", "ollama", "embedded"):
        raise ConfigError(f"backend must be auto, ollama or embedded, got {value!r}")
    if name == "reader_process" and value not in ("worker", "inprocess"):
        raise ConfigError(f"reader_process must be worker or inprocess, got {value!r}")
    return value


def load_settings(instance_dir: Path | None = None, overrides: dict | None = None,
                  environ: dict | None = None) -> Settings:
    """Build Settings from defaults, then instance/config.toml, then the environment, then overrides."""
    environ = os.environ if environ is None else environ
    instance_dir = Path(instance_dir or environ.get("NISTCHAT_INSTANCE_DIR") or PROJECT_ROOT / "instance")
    values: dict = {"instance_dir": instance_dir}
    site = instance_dir / "config.toml"
    if site.exists():
        try:
            data = tomllib.loads(site.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{site}: not valid TOML ({exc})") from None
        for key, value in data.items():
            values[key] = _coerce(key, value, instance_dir)
    for env_key, name in _ENV.items():
        if environ.get(env_key):
            values[name] = _coerce(name, environ[env_key], Path.cwd())
    for key, value in (overrides or {}).items():
        values[key] = _coerce(key, value, Path.cwd()) if key in _PATH_FIELDS else value
    if values.get("backend", "auto") not in ("auto", "ollama", "embedded"):
        raise ConfigError(f"backend must be auto, ollama or embedded, got {values['backend']!r}")
    return Settings(**values)

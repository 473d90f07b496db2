"""Choose a backend per role from config and from what is reachable, and say why.

Models load lazily, once per process, behind a lock. A role that cannot be served raises the
typed error it recorded (never a silent downgrade): `auto` falls back to embedded only with the
reason written into `describe()`, which the status page and `nistchat models` show.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ...config import JUDGES_IN_PROMPT, Settings
from . import ollama as ollama_backend
from . import openai as openai_backend
from ..errors import BackendError, ModelMissing, Unreachable
from .base import PREFILL_PROBE_MESSAGES, SELF_TEST_MESSAGES, Embedder, Pace, Reader, Reranker, Verifier

ROLES = ("embedder", "reranker", "reader", "verifier")
RETRY_FAILED_LOAD_S = 30.0  # a role that failed to load is tried again after this (a short outage heals)
FIXES = {  # what a person can do about a failed self-test, by error kind
    "model_missing": "Run `nistchat models install` (or `make run`) to fetch and check the model files again.",
    "unreachable": "If the reader process crashed, rebuild llama.cpp for this CPU: `rm -rf .venv && make run` "
                   "(docs/operations.md, 'The reader process'). With Ollama, check that `ollama serve` is running; with an "
                   "OpenAI-compatible server, that it listens at backends.openai_base_url (docs/reader-servers.md).",
    "timeout": "The machine may be overloaded; the reader is retried on the next question.",
    "interrupted": "The reader process was restarted; the next question retries it.",
}

# Names with a well-known local folder under data/models/ (filled by `nistchat models install`).
LOCAL_NAMES = {
    "all-MiniLM-L6-v2": "all-MiniLM-L6-v2",
    "sentence-transformers/all-MiniLM-L6-v2": "all-MiniLM-L6-v2",
    "cross-encoder/ms-marco-MiniLM-L-6-v2": "ms-marco-MiniLM-L-6-v2",
    "ms-marco-MiniLM-L-6-v2": "ms-marco-MiniLM-L-6-v2",
    "embeddinggemma-300m": "embeddinggemma-300m",
    "google/embeddinggemma-300m": "embeddinggemma-300m",
}


@dataclass
class RoleState:
    role: str
    backend: str  # ollama | openai | embedded | none
    model: str
    location: str
    reason: str  # why this backend was chosen
    loaded: bool = False
    error: str = ""

    def to_dict(self) -> dict:
        return {"role": self.role, "backend": self.backend, "model": self.model, "location": self.location,
                "reason": self.reason, "loaded": self.loaded, "error": self.error}


def local_model_path(models_dir: Path, name: str) -> Path:
    """A well-known name's folder under `models_dir`; any other name is a path of its own."""
    folder = LOCAL_NAMES.get(name)
    return Path(models_dir) / folder if folder else Path(name).expanduser()


class ModelRegistry:
    """The active model for each role; one instance per process."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._lock = threading.RLock()
        self._models: dict[str, object] = {}
        self._second: dict[str, Embedder] = {}
        self._errors: dict[str, tuple[BackendError, float]] = {}
        self.states = self._plan()
        self.self_test_result: dict = {"state": "not run"}
        self.pace = Pace(settings.backends.first_token_floor_s, settings.backends.first_token_ceiling_s)

    # -- planning: which backend serves each role, decided without loading anything heavy
    def _probe_ollama(self) -> tuple[list[str] | None, str]:
        try:
            return ollama_backend.list_models(self.settings.backends.ollama_host, timeout_s=2.0), ""
        except BackendError as exc:
            return None, exc.message

    def openai_endpoint(self) -> openai_backend.Endpoint:
        """The OpenAI-compatible server, with its key read now (from the environment or the key file)."""
        s = self.settings.backends
        if not s.openai_base_url:
            raise Unreachable("backends.openai_base_url is not set: say where the OpenAI-compatible server "
                              "listens, e.g. http://127.0.0.1:8080/v1 (docs/reader-servers.md).")
        key = openai_backend.read_api_key(s.openai_api_key_env, s.openai_api_key_file)
        return openai_backend.Endpoint(s.openai_base_url, key, s.timeout_s)

    def _probe_openai(self) -> str:
        """Why auto cannot use the OpenAI-compatible server ('' when it lists openai_model)."""
        s = self.settings.backends
        if not s.openai_base_url or not s.openai_model:
            return "no OpenAI-compatible server configured (backends.openai_base_url, openai_model)"
        try:
            available = openai_backend.list_models(self.openai_endpoint(), timeout_s=2.0)
        except BackendError as exc:
            return exc.message
        if s.openai_model not in available:
            return f"the server at {s.openai_base_url} has no {s.openai_model!r}"
        return ""

    def _choose(self) -> tuple[str, str, list[str] | None]:
        """(backend for reader and verifier, why, the Ollama models when Ollama was asked)."""
        s = self.settings.backends
        if s.backend in ("embedded", "openai"):
            return s.backend, f"NISTCHAT_BACKEND={s.backend}", None
        available, why_not = self._probe_ollama()
        if s.backend == "ollama":
            return "ollama", "NISTCHAT_BACKEND=ollama", available
        if available is not None and ollama_backend.has_model(available, s.reader_model):
            return "ollama", f"auto: Ollama at {s.ollama_host} has {s.reader_model!r}", available
        if available is not None:
            why_not = f"Ollama at {s.ollama_host} has no {s.reader_model!r}"
        why_not_openai = self._probe_openai()
        if not why_not_openai:
            return "openai", f"auto: {why_not}; the server at {s.openai_base_url} has {s.openai_model!r}", available
        if s.openai_base_url:
            why_not = f"{why_not}; {why_not_openai}"
        return "embedded", f"auto: {why_not}", available

    def _plan(self) -> dict[str, RoleState]:
        s, paths = self.settings.backends, self.settings
        chosen, reason, available = self._choose()
        use_ollama = chosen == "ollama"

        states = {}
        emb_ollama = use_ollama and s.ollama_embedder
        states["embedder"] = (RoleState("embedder", "ollama", s.ollama_embedder, s.ollama_host, reason) if emb_ollama
                              else RoleState("embedder", "embedded", s.embedder,
                                             str(local_model_path(paths.models_dir, s.embedder)), "sentence-transformers, in-process"))
        if s.reranker.lower() in ("", "none", "off"):
            states["reranker"] = RoleState("reranker", "none", "-", "-", "disabled in config")
        else:
            states["reranker"] = RoleState("reranker", "embedded", s.reranker,
                                           str(local_model_path(paths.models_dir, s.reranker)), "sentence-transformers CrossEncoder")
        if chosen == "openai":
            states["reader"] = RoleState("reader", "openai", s.openai_model, s.openai_base_url, reason)
            states["verifier"] = (
                RoleState("verifier", "openai", s.openai_verifier_model, s.openai_base_url, "openai_verifier_model")
                if s.openai_verifier_model else
                RoleState("verifier", "openai", f"{s.openai_model} (as Yes/No judge)", s.openai_base_url,
                          "no openai_verifier_model: reader judges"))
        elif use_ollama:
            states["reader"] = RoleState("reader", "ollama", s.reader_model, s.ollama_host, reason)
            if available is not None and ollama_backend.has_model(available, s.verifier_model):
                states["verifier"] = RoleState("verifier", "ollama", s.verifier_model, s.ollama_host,
                                               f"Ollama has {s.verifier_model!r}")
            else:
                states["verifier"] = RoleState("verifier", "ollama", f"{s.reader_model} (as Yes/No judge)",
                                               s.ollama_host, f"Ollama has no {s.verifier_model!r}: reader judges")
        else:
            where = "in a worker process" if s.reader_process == "worker" else "in-process"
            states["reader"] = RoleState("reader", "embedded", paths.gguf_path.stem,
                                         str(paths.gguf_path), f"llama.cpp {where} ({reason})")
            states["verifier"] = RoleState("verifier", "embedded", f"{paths.gguf_path.stem} (as Yes/No judge)",
                                           str(paths.gguf_path), "no MiniCheck model offline: reader judges")
        for state in states.values():  # say up front what cannot load, before anyone asks for it
            if state.backend == "embedded" and not Path(state.location).exists():
                state.error = f"not found at {state.location}"
        return states

    # -- loading
    def _build(self, role: str):
        s, st, paths = self.settings.backends, self.states[role], self.settings
        if role == "embedder":
            if st.backend == "ollama":
                return ollama_backend.OllamaEmbedder(s.ollama_host, s.ollama_embedder, s.timeout_s)
            from .embedded import SentenceTransformerEmbedder, limit_torch_threads
            limit_torch_threads(s.query_threads)
            return SentenceTransformerEmbedder(Path(st.location), name=s.embedder)
        if role == "reranker":
            if st.backend == "none":
                raise ModelMissing("Reranker disabled in config.")
            from .embedded import CrossEncoderReranker
            return CrossEncoderReranker(Path(st.location), name=s.reranker)
        if role == "reader":
            if st.backend == "openai":
                endpoint = self.openai_endpoint()
                openai_backend.check_model(endpoint, s.openai_model)
                return openai_backend.OpenAIReader(endpoint, s.openai_model)
            if st.backend == "ollama":
                available, why_not = self._probe_ollama()
                if available is None:
                    raise Unreachable(why_not)
                if not ollama_backend.has_model(available, s.reader_model):
                    raise ModelMissing(f"Ollama at {s.ollama_host} has no model {s.reader_model!r}. "
                                       f"Run `ollama pull {s.reader_model}`.")
                return ollama_backend.OllamaReader(s.ollama_host, s.reader_model, s.timeout_s,
                                                   s.first_token_ceiling_s)
            if s.reader_process == "worker":
                from .supervisor import ReaderWorker, WorkerReader
                if not paths.gguf_path.is_file():
                    raise ModelMissing(f"Reader model file not found: {paths.gguf_path}. Run `nistchat models install`.")
                from ..background import job_pids
                from .contention import ThreadChooser
                chooser = ThreadChooser(s.threads, ignore=lambda: job_pids(paths.index_dir))
                return WorkerReader(ReaderWorker(paths.gguf_path, n_ctx=s.n_ctx, threads=s.threads), s.timeout_s,
                                    s.first_token_ceiling_s, chooser)
            from .embedded import LlamaCppReader
            return LlamaCppReader(paths.gguf_path, n_ctx=s.n_ctx, threads=s.threads, timeout_s=s.timeout_s)
        if role == "verifier":
            if st.backend == "ollama" and "judge" not in st.model:
                return ollama_backend.OllamaVerifier(s.ollama_host, s.verifier_model, s.timeout_s)
            if st.backend == "openai" and "judge" not in st.model:
                endpoint = self.openai_endpoint()
                openai_backend.check_model(endpoint, s.openai_verifier_model)
                return openai_backend.OpenAIVerifier(endpoint, s.openai_verifier_model)
            from .embedded import ReaderJudgeVerifier
            return ReaderJudgeVerifier(self.get("reader"), judges_in_prompt=st.backend == "embedded"
                                       and paths.gguf_path.name in JUDGES_IN_PROMPT)
        raise KeyError(role)

    def get(self, role: str):
        """The loaded model for a role; raises the role's BackendError if it cannot be served."""
        with self._lock:
            if role in self._models:
                return self._models[role]
            if role in self._errors:
                exc, failed_at = self._errors[role]
                if time.monotonic() - failed_at < RETRY_FAILED_LOAD_S:
                    raise exc
                del self._errors[role]
            try:
                model = self._build(role)
            except BackendError as exc:
                self._errors[role] = (exc, time.monotonic())
                self.states[role].error = exc.message
                raise
            self._models[role] = model
            self.states[role].loaded = True
            self.states[role].error = ""
            return model

    # -- typed getters: what a stage is handed (bound methods load the model on first use)
    def embedder(self) -> Embedder:
        return self.get("embedder")

    def reranker(self) -> Reranker | None:
        """None when no reranker can be served (`reason_missing("reranker")` says why)."""
        return self.optional("reranker")

    def reranker_missing(self) -> str:
        return self.reason_missing("reranker")

    def reader(self) -> Reader:
        return self.get("reader")

    def verifier(self) -> Verifier:
        return self.get("verifier")

    def second_embedder(self, name: str) -> Embedder:
        """The second embedder's model for questions, loaded once per process however many
        retrievers (a Runtime.derived for an eval run) search with it."""
        with self._lock:
            if name not in self._second:
                from .embedded import SentenceTransformerEmbedder

                self._second[name] = SentenceTransformerEmbedder(local_model_path(self.settings.models_dir, name),
                                                                 name=name)
            return self._second[name]

    def reader_pace(self) -> dict:
        """For /status: the reader's measured prefill rate and first-token limits, and the threads it
        chose last with the host's load then."""
        with self._lock:
            reader = self._models.get("reader")
        chooser = getattr(reader, "threads", None)
        return {**self.pace.to_dict(), "threads": chooser.state() if hasattr(chooser, "state") else {}}

    def worker(self):
        """The reader's worker process, when the reader runs in one (else None)."""
        with self._lock:
            reader = self._models.get("reader")
        return getattr(reader, "worker", None)

    def self_test(self) -> dict:
        """One embedding and a one-token generation through the reader, as every answer makes
        them. Never raises: the result (with a fix per failure) is kept for /status and the page.
        A native crash during the test ends the worker process, not this one."""
        self.self_test_result = {"state": "running"}
        result: dict = {"state": "passed", "roles": {}}
        for role in ("embedder", "reader"):
            t = time.perf_counter()
            try:
                model = self.get(role)
                if role == "embedder":
                    model.embed(["self-test"])
                    extra = {}
                else:
                    extra = model.self_test() if hasattr(model, "self_test") else {}
                    if not extra:
                        "".join(model.stream(SELF_TEST_MESSAGES, max_tokens=1, temperature=0.0))
                    extra["prefill_tokens_per_s"] = self._measure_prefill(model)
                result["roles"][role] = {"ok": True, "ms": round((time.perf_counter() - t) * 1000, 1), **extra}
            except BackendError as exc:
                result["state"] = "failed"
                result["roles"][role] = {"ok": False, "kind": exc.kind, "error": exc.message,
                                         "fix": FIXES.get(exc.kind, "")}
        result["at"] = time.strftime("%Y-%m-%d %H:%M:%S")
        self.self_test_result = result
        return result

    def _measure_prefill(self, reader) -> float | None:
        """Prompt tokens a second the reader reads on this machine now (one probe of ~250 tokens, in
        the unit the pipeline counts prompts in), the starting point of `self.pace`."""
        from ..text import count_tokens

        tokens = sum(count_tokens(m["content"]) for m in PREFILL_PROBE_MESSAGES)
        t = time.perf_counter()
        "".join(reader.stream(PREFILL_PROBE_MESSAGES, max_tokens=1, temperature=0.0))
        self.pace.calibrate(tokens, time.perf_counter() - t)
        return self.pace.to_dict()["prefill_tokens_per_s"]

    def optional(self, role: str):
        """The model, or None when it cannot be served (the caller records why in its trace)."""
        try:
            return self.get(role)
        except BackendError:
            return None

    def reason_missing(self, role: str) -> str:
        return self.states[role].error or "not loaded"

    def describe(self) -> list[dict]:
        """Each role's state; a role whose load failed also says when the next question will try again."""
        roles = [self.states[r].to_dict() for r in ROLES]
        with self._lock:
            for role, (_exc, failed_at) in self._errors.items():
                wait = RETRY_FAILED_LOAD_S - (time.monotonic() - failed_at)
                roles[ROLES.index(role)]["retry_in_s"] = max(0, round(wait))
        worker = self.worker()
        if worker is not None:  # the process's own state: pid, restarts, how the last one ended
            roles[ROLES.index("reader")]["worker"] = worker.state()
        return roles

    def active(self) -> dict:
        """Compact description for answers and logs: role -> 'backend:model', marked when the role
        cannot be served (a missing reranker must not read as if it had ranked the sources)."""
        return {r: f"{self.states[r].backend}:{self.states[r].model}"
                   + (" (unavailable)" if self.states[r].error else "") for r in ROLES}

"""questions_config: the topic panel's categories and questions, in three entry modes.

- plain string: the text is both the button label and the question sent to the engine;
- {"label", "prompt"}: the page shows `label`, the engine gets `prompt`;
- {"label", "answer"}: `answer` is returned verbatim, no retrieval and no LLM (answer wins
  over prompt when both are present).

The live file is instance/questions_config.json (the packaged default until an admin saves).
Saves are validated, atomic (temp file + os.replace), versioned in the database, and refused
when made on an older version than the file now holds (two admins editing at once).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PATH = Path(__file__).with_name("default_questions.json")
MODES = ("plain", "prompt", "answer")
_ENTRY_KEYS = {"label", "prompt", "answer"}
_CATEGORY_KEYS = {"name", "emoji", "intro", "questions"}
_save_lock = threading.Lock()


class StaleVersion(Exception):
    """The config changed since the editor loaded it; nothing was saved."""


@dataclass
class Topic:
    """One question button, resolved to what the page shows and what the engine gets."""
    label: str
    mode: str  # plain | prompt | answer
    prompt: str | None = None
    answer: str | None = None

    @property
    def text(self) -> str:
        """The editor's single text field: the prompt or the answer (empty for plain)."""
        return self.answer if self.mode == "answer" else (self.prompt if self.mode == "prompt" else "") or ""


def entry_to_topic(entry) -> Topic:
    if isinstance(entry, str):
        return Topic(label=entry, mode="plain")
    if entry.get("answer"):
        return Topic(label=entry["label"], mode="answer", answer=entry["answer"], prompt=entry.get("prompt"))
    return Topic(label=entry["label"], mode="prompt", prompt=entry["prompt"])


def topic_to_entry(topic: Topic):
    if topic.mode == "plain":
        return topic.label
    if topic.mode == "answer":
        return {"label": topic.label, "answer": topic.answer or ""}
    return {"label": topic.label, "prompt": topic.prompt or ""}


def _nonempty_str(value) -> bool:
    return isinstance(value, str) and value.strip() != ""


def validate(config) -> list[str]:
    """Every schema problem, each with its path (e.g. `categories[1].questions[0]: ...`)."""
    errors: list[str] = []
    if not isinstance(config, dict):
        return ["top level: must be an object with a \"categories\" list"]
    unknown = set(config) - {"intro", "categories"}
    if unknown:
        errors.append(f"top level: unknown keys {sorted(unknown)}")
    if "intro" in config and not isinstance(config["intro"], str):
        errors.append("intro: must be text")
    categories = config.get("categories")
    if not isinstance(categories, list):
        return errors + ["categories: must be a list"]
    labels: dict[str, str] = {}
    for i, cat in enumerate(categories):
        where = f"categories[{i}]"
        if not isinstance(cat, dict):
            errors.append(f"{where}: must be an object with name, emoji, intro, questions")
            continue
        if set(cat) - _CATEGORY_KEYS:
            errors.append(f"{where}: unknown keys {sorted(set(cat) - _CATEGORY_KEYS)}")
        if not _nonempty_str(cat.get("name")):
            errors.append(f"{where}.name: is required")
        for key in ("emoji", "intro"):
            if key in cat and not isinstance(cat[key], str):
                errors.append(f"{where}.{key}: must be text")
        questions = cat.get("questions", [])
        if not isinstance(questions, list):
            errors.append(f"{where}.questions: must be a list")
            continue
        for j, entry in enumerate(questions):
            qwhere = f"{where}.questions[{j}]"
            if isinstance(entry, str):
                label = entry
                if not entry.strip():
                    errors.append(f"{qwhere}: question text is empty")
                    continue
            elif isinstance(entry, dict):
                if set(entry) - _ENTRY_KEYS:
                    errors.append(f"{qwhere}: unknown keys {sorted(set(entry) - _ENTRY_KEYS)}")
                label = entry.get("label")
                if not _nonempty_str(label):
                    errors.append(f"{qwhere}.label: is required")
                    continue
                if not (_nonempty_str(entry.get("prompt")) or _nonempty_str(entry.get("answer"))):
                    errors.append(f"{qwhere}: needs a non-empty \"prompt\" or \"answer\" (or use plain text)")
                for key in ("prompt", "answer"):
                    if key in entry and not isinstance(entry[key], str):
                        errors.append(f"{qwhere}.{key}: must be text")
            else:
                errors.append(f"{qwhere}: must be text or an object with label and prompt/answer")
                continue
            key = label.strip().casefold()
            if key in labels:
                errors.append(f"{qwhere}: duplicate label {label!r} (also at {labels[key]})")
            else:
                labels[key] = qwhere
    return errors


def parse(text: str) -> tuple[dict | None, list[str]]:
    """JSON text to a validated config, or the reasons it was rejected."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."]
    errors = validate(config)
    return (None, errors) if errors else (config, [])


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dumps(config: dict) -> str:
    return json.dumps(config, ensure_ascii=False, indent=2) + "\n"


def read_text(path: Path) -> str:
    """The live config text: the site file, else the packaged default."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return DEFAULT_PATH.read_text(encoding="utf-8")


def load(path: Path) -> tuple[dict, str]:
    """(config, sha256 of its text). A broken site file falls back to the default, so the chat
    page keeps working; the admin editor shows the file's problems."""
    text = read_text(path)
    config, errors = parse(text)
    if errors:
        text = DEFAULT_PATH.read_text(encoding="utf-8")
        config = json.loads(text)
    return config, sha256(text)


def find_topic(config: dict, label: str) -> Topic | None:
    wanted = label.strip().casefold()
    for cat in config.get("categories", []):
        for entry in cat.get("questions", []):
            topic = entry_to_topic(entry)
            if topic.label.strip().casefold() == wanted:
                return topic
    return None


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(path: Path, config: dict, base_sha: str, record_version) -> str:
    """Write `config` if the file still has `base_sha`; returns the new sha. `record_version(text,
    note)` stores a version row (called for the old text first when no versions exist yet).

    A thread lock plus an flock on a side file make check-and-write one step, also across
    processes (two waitress workers, or the CLI)."""
    text = dumps(config)
    lock_path = path.with_name(path.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with _save_lock, open(lock_path, "w") as lock_handle:
        fcntl.flock(lock_handle, fcntl.LOCK_EX)
        try:
            current = read_text(path)
            if sha256(current) != base_sha:
                raise StaleVersion("Someone saved the questions since you opened the editor. "
                                   "Nothing was saved; reload to see their version, then re-apply your change.")
            record_version(current, text)
            _atomic_write(path, text)
        finally:
            fcntl.flock(lock_handle, fcntl.LOCK_UN)
    return sha256(text)

"""What differs between the two database engines, in one place: SQLite (the default, a file in
instance/) and PostgreSQL (`database_url = "postgresql+psycopg://..."`, for several web
processes). The models, the Alembic migrations and every query but these are the same on both.

`database_for(url)` picks the implementation once, from the URL's dialect; the app keeps it
(extensions.app_database). Each implementation answers for: its engine options, history search
(FTS5 on SQLite, a tsvector column with a GIN index on PostgreSQL), its size on /status, and
backup / restore (SQLite's online backup API; pg_dump and psql)."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import event, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session

from .config import ConfigError

# Search objects the migrations make by hand and no model describes (0002's FTS5 table and its
# shadow tables on SQLite; 0007's generated column and its index on PostgreSQL): autogenerate and
# the schema test leave them alone.
HAND_MADE_PREFIXES = ("message_fts", "search_vector", "ix_message_search_vector")

# The text-search configuration of the PostgreSQL column (migration 0007) and its queries:
# English stemming, close to FTS5's porter tokenizer.
PG_TEXT_CONFIG = "english"


def hand_made(name: str | None) -> bool:
    return bool(name) and name.startswith(HAND_MADE_PREFIXES)


class DatabaseError(RuntimeError):
    """A backup or restore could not be done; the message says why and what to do."""


@dataclass(frozen=True)
class Hit:
    """One history search hit: the question whole and a snippet of the answer, each with the
    highlight marks around every match."""
    message_id: int
    conversation_id: str
    created_at: datetime
    question: str
    answer: str


@dataclass(frozen=True)
class SearchQuery:
    """What history search asks the engine: the words typed (already split: only word
    characters, so no engine ever sees an operator), the owner (None: everyone), a page, and the
    two marks to wrap matches in."""
    terms: tuple[str, ...]
    owner: str | None
    limit: int
    offset: int
    mark_start: str
    mark_end: str
    snippet_words: int = 30


class Database(ABC):
    """One engine's specifics. Stateless but for the URL, so one instance serves every thread."""

    dialect: str = ""
    backup_suffix: str = ""

    def __init__(self, url: URL):
        self.url = url

    def describe(self) -> str:
        """Where the data lives, for messages (never the password)."""
        return self.url.render_as_string(hide_password=True)

    def engine_options(self) -> dict:
        return {}

    def prepare(self, engine: Engine) -> None:
        """Hook run once on the app's engine (connection settings)."""

    @abstractmethod
    def search(self, session: Session, query: SearchQuery) -> tuple[list[Hit], int]:
        """One page of messages matching every term as a prefix (search as you type), newest
        first, and how many match in all."""

    @abstractmethod
    def size_bytes(self, session: Session) -> int:
        """Space the database takes, for /status."""

    @abstractmethod
    def backup(self, engine: Engine, path: Path) -> None:
        """A consistent copy of the whole database at `path`, taken while the server writes."""

    @abstractmethod
    def restore(self, engine: Engine, path: Path) -> None:
        """Replace the database's contents with the backup at `path` (made by `backup`)."""


def _as_datetime(value) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _rows(result) -> list[Hit]:
    return [Hit(r[0], r[1], _as_datetime(r[2]), r[3] or "", r[4] or "") for r in result]


class SQLiteDatabase(Database):
    dialect = "sqlite"
    backup_suffix = ".sqlite3"
    HEADER = b"SQLite format 3\x00"

    @property
    def path(self) -> Path:
        return Path(self.url.database or "")

    def describe(self) -> str:
        return str(self.path)

    def engine_options(self) -> dict:
        return {"connect_args": {"timeout": 15, "check_same_thread": False}}

    def prepare(self, engine: Engine) -> None:
        event.listen(engine, "connect", _sqlite_pragmas)

    @staticmethod
    def fts_query(terms: tuple[str, ...]) -> str:
        """Each word quoted (no FTS5 operator survives), prefix-matched."""
        return " ".join(f'"{t}"*' for t in terms)

    def search(self, session: Session, query: SearchQuery) -> tuple[list[Hit], int]:
        scope = "" if query.owner is None else "AND m.owner = :owner"
        params = {"query": self.fts_query(query.terms), "owner": query.owner, "limit": query.limit,
                  "offset": query.offset, "hs": query.mark_start, "he": query.mark_end, "n": query.snippet_words}
        match = f"FROM message_fts JOIN message m ON m.id = message_fts.rowid WHERE message_fts MATCH :query {scope}"
        total = session.execute(text(f"SELECT count(*) {match}"), params).scalar_one()
        rows = session.execute(text(
            "SELECT m.id, m.conversation_id, m.created_at, highlight(message_fts, 0, :hs, :he), "
            f"snippet(message_fts, 1, :hs, :he, ' … ', :n) {match} ORDER BY m.id DESC LIMIT :limit OFFSET :offset"),
            params).all()
        return _rows(rows), int(total)

    def size_bytes(self, session: Session) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            try:
                total += self.path.with_name(self.path.name + suffix).stat().st_size
            except OSError:
                pass
        return total

    def backup(self, engine: Engine, path: Path) -> None:
        """sqlite3's online backup in one step: it reads one snapshot (WAL lets the server go on
        writing meanwhile). The copy is switched out of WAL so it is one self-contained file."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
        os.close(fd)
        try:
            raw = engine.raw_connection()
            try:
                target = sqlite3.connect(partial)
                try:
                    raw.driver_connection.backup(target)
                    target.execute("PRAGMA journal_mode=DELETE")
                finally:
                    target.close()
            finally:
                raw.close()
            os.replace(partial, path)
        finally:
            Path(partial).unlink(missing_ok=True)

    def restore(self, engine: Engine, path: Path) -> None:
        path = Path(path)
        if _header(path, len(self.HEADER)) != self.HEADER:
            raise DatabaseError(f"{path} is not an SQLite backup (`nistchat db backup` of an SQLite database)")
        source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            if source.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                raise DatabaseError(f"{path} fails SQLite's integrity check; nothing was restored")
            if not source.execute("SELECT 1 FROM sqlite_master WHERE name = 'alembic_version'").fetchone():
                raise DatabaseError(f"{path} is not a NISTChat database (no alembic_version); nothing was restored")
            engine.dispose()  # the pool's connections would keep the old schema cached
            raw = engine.raw_connection()
            try:
                source.backup(raw.driver_connection)  # one step, under the target's write lock
            finally:
                raw.close()
        finally:
            source.close()
        engine.dispose()


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    """WAL lets readers run while an answer is being written; busy_timeout makes two answers that
    finish at once wait for each other instead of failing with "database is locked"."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=15000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _header(path: Path, n: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(n)
    except OSError as exc:
        raise DatabaseError(f"cannot read {path}: {exc.strerror}") from None


class PostgresDatabase(Database):
    dialect = "postgresql"
    backup_suffix = ".pgdump"
    HEADER = b"PGDMP"  # pg_dump's custom format

    def engine_options(self) -> dict:
        return {"pool_pre_ping": True}  # a restarted server leaves dead connections in the pool

    @staticmethod
    def tsquery(terms: tuple[str, ...]) -> str:
        """to_tsquery text: each word quoted and prefix-matched ('risk':* & 'manag':*). Terms hold
        word characters only, so neither a quote nor an operator can reach the parser."""
        return " & ".join(f"'{t}':*" for t in terms)

    def search(self, session: Session, query: SearchQuery) -> tuple[list[Hit], int]:
        scope = "" if query.owner is None else "AND m.owner = :owner"
        marks = f"StartSel={query.mark_start}, StopSel={query.mark_end}"
        params = {"query": self.tsquery(query.terms), "owner": query.owner, "limit": query.limit,
                  "offset": query.offset, "cfg": PG_TEXT_CONFIG,
                  "whole": f"{marks}, HighlightAll=true",
                  "snippet": f"{marks}, MaxWords={query.snippet_words}, MinWords={query.snippet_words // 2}"}
        tsq = "to_tsquery(CAST(:cfg AS regconfig), :query)"
        match = f"FROM message m WHERE m.search_vector @@ {tsq} {scope}"
        total = session.execute(text(f"SELECT count(*) {match}"), params).scalar_one()
        rows = session.execute(text(
            f"SELECT m.id, m.conversation_id, m.created_at, "
            f"ts_headline(CAST(:cfg AS regconfig), coalesce(m.label, m.question), {tsq}, :whole), "
            f"ts_headline(CAST(:cfg AS regconfig), m.answer, {tsq}, :snippet) "
            f"{match} ORDER BY m.id DESC LIMIT :limit OFFSET :offset"), params).all()
        return _rows(rows), int(total)

    def size_bytes(self, session: Session) -> int:
        return int(session.execute(text("SELECT pg_database_size(current_database())")).scalar_one())

    def _client(self, name: str) -> str:
        found = shutil.which(name)
        if not found:
            raise DatabaseError(f"{name} not found: install PostgreSQL's client programs "
                                "(Debian: apt-get install postgresql-client)")
        return found

    def _environ(self) -> dict:
        """libpq's variables for the URL, so the password never appears in a process list."""
        url = self.url
        env = dict(os.environ)
        pairs = {"PGHOST": url.host or url.query.get("host"), "PGPORT": url.port, "PGUSER": url.username,
                 "PGPASSWORD": url.password, "PGDATABASE": url.database}
        env.update({k: str(v) for k, v in pairs.items() if v not in (None, "")})
        return env

    def _run(self, args: list[str], what: str, options: str = "") -> None:
        env = self._environ()
        if options:
            env["PGOPTIONS"] = f"{env.get('PGOPTIONS', '')} {options}".strip()
        done = subprocess.run(args, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise DatabaseError(f"{what} failed: {done.stderr.strip()[-2000:]}")

    def backup(self, engine: Engine, path: Path) -> None:
        """pg_dump: one consistent snapshot (a repeatable-read transaction) while the server writes."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        try:
            self._run([self._client("pg_dump"), "--format=custom", "--no-owner", "--no-privileges",
                       f"--file={partial}"], "pg_dump")
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)

    def restore(self, engine: Engine, path: Path) -> None:
        """The schema is emptied and the dump replayed in one transaction: a failure leaves the
        database as it was."""
        path = Path(path)
        if _header(path, len(self.HEADER)) != self.HEADER:
            raise DatabaseError(f"{path} is not a PostgreSQL backup (`nistchat db backup` of a PostgreSQL database)")
        with tempfile.TemporaryDirectory(prefix="nistchat-restore-") as tmp:
            script = Path(tmp) / "restore.sql"
            self._run([self._client("pg_restore"), "--no-owner", "--no-privileges", f"--file={script}", str(path)],
                      "pg_restore")
            engine.dispose()
            self._run([self._client("psql"), "--no-psqlrc", "--quiet", "--single-transaction",
                       "--set=ON_ERROR_STOP=1", "--command=DROP SCHEMA public CASCADE; CREATE SCHEMA public;",
                       f"--file={script}"], "psql (restore)",
                      options="-c lock_timeout=30s")  # a server still using the tables: fail, not hang
        engine.dispose()


ENGINES: dict[str, type[Database]] = {cls.dialect: cls for cls in (SQLiteDatabase, PostgresDatabase)}


def database_for(url: str) -> Database:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(f"setting 'database_url' is not a database URL: {url!r}") from None
    kind = ENGINES.get(parsed.get_backend_name())
    if kind is None:
        raise ConfigError(f"setting 'database_url' {parsed.render_as_string(hide_password=True)!r}: only "
                          f"{', '.join(ENGINES)} are supported")
    return kind(parsed)

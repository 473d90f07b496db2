"""A real PostgreSQL server for the tests: initdb into a temporary folder, started on a free
loopback port (its unix socket in that folder too), stopped and deleted at the end of the session.

PostgreSQL refuses to run as root: as root, the server runs as the `postgres` system user
(Debian's package makes it) and its folder belongs to that user. Each test gets a database of
its own, copied from a template migrated once (CREATE DATABASE ... TEMPLATE takes ~0.1 s)."""
from __future__ import annotations

import glob
import itertools
import os
import pwd
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ROLE = "nistchat"  # the server's superuser, as initdb makes it


def find_bindir() -> Path | None:
    """The newest installed server's programs (Debian: /usr/lib/postgresql/N/bin), else PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("postgres")
    return Path(on_path).parent if on_path and shutil.which("initdb") else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.user = None
        if os.geteuid() == 0:
            try:
                self.user = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root and there is no `postgres` user to run PostgreSQL as") from None
        self.root = Path(tempfile.mkdtemp(prefix="nistchat-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self._names = itertools.count(1)
        self._drops: queue.Queue[str] = queue.Queue()
        self._clean: queue.Queue[str] = queue.Queue()
        self.template = ""
        self._schema_of_template: tuple[list, list] | None = None
        threading.Thread(target=self._dropper, name="pg-drop", daemon=True).start()

    def _run_as(self) -> dict:
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []} if self.user else {}

    def start(self) -> "PostgresServer":
        if self.user:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        env = {**os.environ, "LC_ALL": "C.UTF-8"}
        done = subprocess.run([str(self.bindir / "initdb"), "-D", str(self.data), "-U", ROLE, "--auth=trust",
                               "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
                              capture_output=True, text=True, env=env, cwd=self.root, **self._run_as())
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr[-2000:]}")
        # Durability off: a test server that loses its data on a crash is fine, and it is much faster.
        self.log = open(self.root / "server.log", "wb")
        self.process = subprocess.Popen(
            [str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.root),
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=self.root, **self._run_as())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited: {(self.root / 'server.log').read_text()[-2000:]}")
            ready = subprocess.run([str(self.bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                                   capture_output=True)
            if ready.returncode == 0:
                return self
            time.sleep(0.1)
        raise RuntimeError("postgres did not become ready in 60 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # "fast" shutdown: SIGTERM's "smart" one waits for clients
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{ROLE}@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str) -> None:
        """One statement outside a transaction (CREATE/DROP DATABASE), on the maintenance database."""
        import psycopg
        with psycopg.connect(host="127.0.0.1", port=self.port, user=ROLE, dbname="postgres", autocommit=True) as conn:
            conn.execute(sql)

    def new_name(self, prefix: str = "t") -> str:
        return f"{prefix}{next(self._names)}"

    def create_database(self, template: str | None = None) -> str:
        name = self.new_name()
        self.admin(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        return name

    def drop_database(self, name: str) -> None:
        self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def checkout(self) -> str:
        """A database at head with no rows: an emptied one from an earlier test, else a new copy
        of the template (CREATE DATABASE costs ~0.5 s on a busy 2-core machine, TRUNCATE ~0.05 s)."""
        try:
            return self._clean.get_nowait()
        except queue.Empty:
            return self.create_database(template=self.template)

    def checkin(self, name: str) -> None:
        """Empty the database for the next test: its connections are ended (the test's app is
        gone), every table but alembic_version truncated, the keys' sequences restarted."""
        import psycopg
        with psycopg.connect(host="127.0.0.1", port=self.port, user=ROLE, dbname=name, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE datname = current_database() AND pid <> pg_backend_pid()")
            tables, version = self._schema(conn)
            if (tables, version) != self._template_schema():
                raise RuntimeError(f"test database {name} was changed away from the template: {version}, {tables}")
            conn.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " RESTART IDENTITY CASCADE")
        self._clean.put(name)

    @staticmethod
    def _schema(conn) -> tuple[list, list]:
        """Its tables and its migration: a test may drop a table (the database gone away) or migrate."""
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                                             "AND tablename <> 'alembic_version' ORDER BY tablename")]
        return tables, conn.execute("SELECT version_num FROM alembic_version").fetchall()

    def _template_schema(self) -> tuple[list, list]:
        if self._schema_of_template is None:
            import psycopg
            with psycopg.connect(host="127.0.0.1", port=self.port, user=ROLE, dbname=self.template) as conn:
                self._schema_of_template = self._schema(conn)
        return self._schema_of_template

    def drop_database_later(self, name: str) -> None:
        """Dropped by a background thread (a drop waits for a checkpoint: ~0.25 s a test saved)."""
        self._drops.put(name)

    def _dropper(self) -> None:
        while True:
            name = self._drops.get()
            try:
                self.drop_database(name)
            except Exception:  # the server is stopping; its folder goes with it
                pass

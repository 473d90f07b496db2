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
import shutil
import signal
import socket
import subprocess
import tempfile
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

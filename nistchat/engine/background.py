"""Background work that steps aside while people's answers use the machine.

Why a file and not a signal or `nice`: on two cores, llama.cpp's threads wait on each other at
every step, so one core taken by the second embedder's build slows an answer many times over
whatever its priority, and a first answer timed out. The build runs in a child process (its
torch threads and memory stay out of the web server), so the web process says "an answer holds
or waits for the reader" with a file in the index folder, one per web process (several may
serve one index), naming its pid. The build looks before each batch and waits while any such
file belongs to a live process. A file left by a process that died is ignored and removed.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from .processes import pid_alive

PREFIX = ".answering."


class AnswerFlag:
    def __init__(self, folder: Path, pid: int | None = None):
        self.folder = Path(folder)
        self.path = self.folder / f"{PREFIX}{pid or os.getpid()}"

    def set(self, busy: bool) -> None:
        """Raise or lower this process's flag (a ReaderQueue busy listener)."""
        try:
            if busy:
                self.folder.mkdir(parents=True, exist_ok=True)
                self.path.write_text(str(os.getpid()), encoding="utf-8")
            else:
                self.path.unlink(missing_ok=True)
        except OSError:  # a read-only or vanished folder: the build then simply does not pause
            pass

    def held(self) -> bool:
        """Whether any live web process has an answer holding or waiting for the reader."""
        return bool(live_pids(self.folder, PREFIX))

    def wait_while_held(self, max_s: float, poll_s: float = 0.2) -> float:
        """Block while the flag is held, at most `max_s`; the seconds waited."""
        start = time.monotonic()
        while self.held() and time.monotonic() - start < max_s:
            time.sleep(poll_s)
        return time.monotonic() - start


JOB_PREFIX = ".background."


class BackgroundJob:
    """A background job's mark in the folder while it runs, so the reader can leave the job's own
    load out when it counts the cores that are free (backends/contention.py): the job pauses for
    the answer at its next batch, so its cores are the answer's."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / f"{JOB_PREFIX}{os.getpid()}"

    def __enter__(self) -> "BackgroundJob":
        try:
            self.path.write_text(str(os.getpid()), encoding="utf-8")
        except OSError:
            pass
        return self

    def __exit__(self, *exc) -> None:
        self.path.unlink(missing_ok=True)


def job_pids(folder: Path) -> list[int]:
    """The live background jobs marked in the folder."""
    return live_pids(folder, JOB_PREFIX)


def live_pids(folder: Path, prefix: str) -> list[int]:
    """The pids named by `prefix<pid>` files in the folder whose process still runs; the files of
    processes that died are removed."""
    pids = []
    for path in Path(folder).glob(f"{prefix}*"):
        try:
            pid = int(path.name[len(prefix):])
        except ValueError:
            continue
        if pid_alive(pid):
            pids.append(pid)
        else:
            path.unlink(missing_ok=True)
    return pids

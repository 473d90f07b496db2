"""How many threads the reader should use now, from what else keeps this machine's cores busy.

Why: llama.cpp's threads wait for each other at every step, so a thread on a core that another
process holds makes the whole step wait for its time slice. On two cores with one taken (a
backup, a virus scan, an index build), one thread is faster than two (docs/decisions.md). The
reader samples the host's busy cores just before it generates (/proc/stat over a short interval,
while it is itself idle), and keeps the choice for a few seconds so the verifier's many short
calls do not each sample again.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

SAMPLE_S = 0.2
KEEP_S = 5.0


def _cpu_times() -> tuple[float, float] | None:
    """(busy, total) jiffies of all cores since boot; None where /proc/stat is missing."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except (OSError, IndexError):
        return None
    values = [float(v) for v in fields[:8]]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
    return sum(values) - idle, sum(values)


def _process_jiffies(pids: list[int]) -> float:
    """CPU time (user + system jiffies) the processes used since they started."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += float(fields[11]) + float(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total


def busy_cores(interval_s: float = SAMPLE_S, ignore: list[int] = ()) -> float | None:
    """Cores' worth of work other processes did over the interval (0 .. cpu_count), leaving out
    the processes in `ignore`."""
    first, first_ignored = _cpu_times(), _process_jiffies(list(ignore))
    if first is None:
        return None
    time.sleep(interval_s)
    second, second_ignored = _cpu_times(), _process_jiffies(list(ignore))
    total = second[1] - first[1]
    busy = (second[0] - first[0]) - (second_ignored - first_ignored)
    return max(0.0, busy / total * (os.cpu_count() or 1)) if total > 0 else 0.0


def threads_for(cores: int, busy: float | None) -> int:
    """All cores but those another process keeps busy (at least one)."""
    if busy is None:
        return cores
    return max(1, min(cores, cores - int(busy + 0.4)))  # a core more than 60 % busy is taken


@dataclass
class ThreadChoice:
    threads: int
    busy_cores: float | None
    cores: int
    at: float

    def to_dict(self) -> dict:
        return {"threads": self.threads, "busy_cores": None if self.busy_cores is None else round(self.busy_cores, 2),
                "cores": self.cores}


class ThreadChooser:
    """The reader's thread count for its next call: fixed, or adapted to the host's load."""

    def __init__(self, fixed: int = 0, ignore: Callable[[], list[int]] = list):
        """`ignore` names processes whose load does not count (background jobs that pause for answers)."""
        self.fixed, self.cores, self.ignore = fixed, os.cpu_count() or 1, ignore
        self.last: ThreadChoice | None = None
        self._lock = threading.Lock()

    def choose(self) -> int:
        if self.fixed:
            return self.fixed
        with self._lock:
            if self.last is None or time.monotonic() - self.last.at > KEEP_S:
                busy = busy_cores(ignore=self.ignore())
                self.last = ThreadChoice(threads_for(self.cores, busy), busy, self.cores, time.monotonic())
            return self.last.threads

    def state(self) -> dict:
        """For /status: what the reader chose last, and why."""
        if self.fixed:
            return {"threads": self.fixed, "mode": "fixed ([backends] threads)"}
        last = self.last.to_dict() if self.last else {}
        return {"mode": "adapted to the host's load", **last}

"""The daily log file on disk (`instance/logs/nistchat_YYYYMMDD.log`, one JSON object a line), so
an operator can grep answers without the database, as with the prototype."""
from __future__ import annotations

import json
import threading
from datetime import datetime
from pathlib import Path

_lock = threading.Lock()


def log_path(instance_dir: Path, when: datetime) -> Path:
    return Path(instance_dir) / "logs" / f"nistchat_{when:%Y%m%d}.log"


def append(instance_dir: Path, record: dict, when: datetime | None = None) -> Path:
    when = when or datetime.now()
    path = log_path(instance_dir, when)
    line = json.dumps({"time": when.isoformat(timespec="seconds"), **record}, ensure_ascii=False, default=str)
    with _lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    return path

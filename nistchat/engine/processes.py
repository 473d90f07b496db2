"""Whether a process still runs, for work that another process left half done (an index swap, a
background build, an evaluation run)."""
from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while process `pid` exists (also when it belongs to another user)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

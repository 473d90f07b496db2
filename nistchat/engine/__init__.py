"""The answer engine, plain Python with no Flask: retrieval, the reader queue, generation,
verification. Scripts, the CLI and the web app all start here:

    from nistchat.engine import Runtime
    runtime = Runtime()                  # settings from instance/config.toml and NISTCHAT_*
    for event in runtime.answer("What are the four AI RMF functions?"):
        ...                              # sources, queue, token, verdict, retry, final | error
"""
from ..config import Settings, load_settings
from .errors import BackendError, IndexMissing
from .runtime import Runtime
from .types import Event, Passage, Retrieval

__all__ = ["BackendError", "Event", "IndexMissing", "Passage", "Retrieval", "Runtime", "Settings", "load_settings"]

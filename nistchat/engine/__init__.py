"""The answer engine, plain Python with no Flask: retrieval, the reader queue, generation,
verification. Scripts, the CLI and the web app all start here:

    from nistchat.engine import Answer, Runtime
    runtime = Runtime()                  # settings from instance/config.toml and NISTCHAT_*
    result = runtime.ask("What are the four AI RMF functions?")   # Answer or Failure
    for event in runtime.answer("..."):  # or stream: sources, queue, token, verdict, retry, final | error
        ...
"""
from ..config import Settings, load_settings
from .errors import BackendError, IndexMissing
from .backends.queue import QueueFull
from .runtime import Runtime
from .types import Answer, Event, Failure, Passage, Retrieval, Source, Verdict

__all__ = ["Answer", "BackendError", "Event", "Failure", "IndexMissing", "Passage", "QueueFull", "Retrieval",
           "Runtime", "Settings", "Source", "Verdict", "load_settings"]

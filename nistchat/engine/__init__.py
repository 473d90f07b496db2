"""The answer engine, plain Python with no Flask, one package per stage: corpus -> index ->
retrieval -> verification -> answer -> evaluation, over the models in backends/. Scripts, the
CLI and the web app all start here:

    from nistchat.engine import Answer, Runtime
    runtime = Runtime()                  # settings from instance/config.toml and NISTCHAT_*
    result = runtime.ask("What are the four AI RMF functions?")   # Answer or Failure
    for event in runtime.answer("..."):  # typed events: Sources, Queue, Prefill, Token, Checked, Retry,
        ...                              # then Final(answer) or Error(failure); .to_dict() at the edges
"""
from ..config import Settings, load_settings
from .answer import (EVENT_TYPES, Checked, Error, Event, Final, Prefill, Queue, Retry, Sources, Token,
                     question_problem)
from .backends.queue import QueueFull, Ticket
from .errors import BackendError, IndexMissing
from .runtime import Runtime
from .types import ERROR_KINDS, Answer, Failure, Passage, Retrieval, Source, Verdict

__all__ = ["Answer", "BackendError", "Checked", "ERROR_KINDS", "EVENT_TYPES", "Error", "Event", "Failure", "Final",
           "IndexMissing", "Passage", "Prefill", "Queue", "QueueFull", "Retrieval", "Retry", "Runtime", "Settings",
           "Source", "Sources", "Ticket", "Token", "Verdict", "load_settings", "question_problem"]

"""The answer engine, plain Python with no Flask, one package per stage: corpus -> index ->
retrieval -> verification -> answer -> evaluation, over the models in backends/. Scripts, the
CLI and the web app all start here:

    from nistchat.engine import Answer, Runtime
    runtime = Runtime()                  # settings from instance/config.toml and NISTCHAT_*
    result = runtime.ask("What are the four AI RMF functions?")   # Answer or Failure
    for event in runtime.answer("..."):  # typed events: Sources, Queue, Prefill, Token, Checked, Retry,
        ...                              # then Final(answer) or Error(failure); .to_dict() at the edges

The public names load on first use: a process started inside the engine (the reader's worker)
runs this file first and needs none of the stages.
"""
from importlib import import_module

_FROM = {  # public name -> the module that defines it
    **dict.fromkeys(("Settings", "load_settings"), "nistchat.config"),
    **dict.fromkeys(("COPY_RETRY", "DECLINED_RETRY", "DENIED_RETRY", "EVENT_TYPES", "LIST_RETRY", "POLAR_RETRY", "PREMISE_RETRY", "Checked", "Error", "Event", "Final", "Prefill", "Queue", "Retry",
                     "Sources", "Token", "question_problem"), f"{__name__}.answer"),
    **dict.fromkeys(("QueueFull", "Ticket"), f"{__name__}.backends.queue"),
    **dict.fromkeys(("BackendError", "IndexMissing"), f"{__name__}.errors"),
    "Runtime": f"{__name__}.runtime",
    **dict.fromkeys(("ERROR_KINDS", "Answer", "Failure", "Passage", "Retrieval", "Source", "Verdict"),
                    f"{__name__}.types"),
}
__all__ = sorted(_FROM)


def __getattr__(name: str):
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_FROM[name]), name)

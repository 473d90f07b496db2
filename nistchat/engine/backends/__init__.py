"""The models behind the stages (embedders, reranker, reader, verifier) on Ollama, an
OpenAI-compatible server or embedded llama.cpp + sentence-transformers, chosen per role by the
registry; the reader queue in front of the reader; model provisioning from PyPI packages.

The public names load on first use: the reader's worker process (`backends/worker.py`) imports
this package and needs none of them (no SQLAlchemy, registry or HTTP clients at its start).
"""
from importlib import import_module

_FROM = {  # public name -> the module that defines it
    "limit_torch_threads": "embedded",
    **dict.fromkeys(("GGUF_PACKAGES", "OPTIONAL_EMBEDDERS", "ProvisionError", "install_defaults"), "provision"),
    **dict.fromkeys(("CHAT", "EVAL", "QueueFull", "ReaderQueue", "Ticket"), "queue"),
    **dict.fromkeys(("ROLES", "ModelRegistry", "local_model_path"), "select"),
    **dict.fromkeys(("SharedReaderQueue", "process_name", "reader_queue", "reader_ticket"), "shared_queue"),
}
__all__ = sorted(_FROM)


def __getattr__(name: str):
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_FROM[name]}"), name)

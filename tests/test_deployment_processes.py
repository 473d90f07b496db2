"""Two `nistchat serve` processes on one PostgreSQL and one reader server (llama_cpp.server on the
0.5B weights), nginx in front round robin with the configuration of docs/deployment.md, and 20
clients asking real questions through both for a minute (scripts/bench_processes.py): no 5xx,
every accepted question stored once and run once, the caps held across both processes, History
the same from each, and answers streamed whichever process the stream request reached. Slow
(~5 minutes here: the reader has 2 cores); docs/decisions.md has its figures beside one process's."""
from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

from tests import nginx_site
from tests.conftest import MODELS_DIR, REPO, TEST_DATA
from tests.postgres_server import find_bindir

pytestmark = pytest.mark.slow


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_processes", REPO / "scripts" / "bench_processes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_processes_behind_nginx_share_the_line_and_lose_nothing(runtime):
    from nistchat.config import GGUF_MODELS

    if find_bindir() is None or not nginx_site.available():
        pytest.skip("needs PostgreSQL's server programs, nginx and openssl")
    if not (MODELS_DIR / GGUF_MODELS["qwen2.5-coder-0.5b"]).exists() or not shutil.which("openssl"):
        pytest.skip("0.5B reader not installed (make test installs it)")
    bench = load_bench()
    args = bench.parse_args(["--processes", "2", "--clients", "20", "--seconds", "60",
                             "--data-dir", str(TEST_DATA), "--models-dir", str(MODELS_DIR)])
    result = bench.run(args)  # `runtime` built the real index under data/test
    print(json.dumps({"bench": "processes", **result}))  # the figures (-s shows them)
    assert bench.failures(result) == [], result
    assert result["accepted"] >= 20 and result["stored"] == result["accepted"] and result["lost"] == 0, result
    assert result["searches"] > 50 and result["streams_with_tokens"] > 0, result
    assert result["max_serving"] == 1 and result["refused_browser"] >= 1, result

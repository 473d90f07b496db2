"""The 20-second smoke version of scripts/bench_load.py (`make bench` runs the 2-minute one): 20
clients loading pages and searching history against a live waitress server on loopback while
answers stream. No 5xx, no lost message; the latency and memory limits are looser than the
benchmark's, since the default suite shares a loaded machine."""
from __future__ import annotations

import importlib.util

from tests.conftest import REPO


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_load", REPO / "scripts" / "bench_load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_twenty_clients_for_twenty_seconds_lose_nothing_and_never_see_a_5xx():
    bench = load_bench()
    args = bench.parse_args(["--light", "--seconds", "20", "--clients", "20", "--streams", "3",
                             "--max-search-p95-ms", "2000", "--max-rss-growth", "0.5"])
    result = bench.run(args)
    assert result["requests"] > 100 and result["searches_timed"] > 20, result
    assert result["accepted"] > 0 and result["stored"] == result["accepted"], result
    assert bench.failures(result, args) == [], result

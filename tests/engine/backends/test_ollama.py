"""The Ollama backends over FakeOllamaServer (a fake: no Ollama can run here), speaking the real
HTTP/NDJSON protocol through the real `ollama` client."""
from __future__ import annotations

import socket

import numpy as np
import pytest

from nistchat.engine.backends import ollama as ob
from nistchat.engine.errors import Interrupted, ModelMissing, TimedOut, Unreachable
from nistchat.engine.backends.select import ModelRegistry
from tests.conftest import make_settings
from tests.fake_ollama import FakeOllamaServer


@pytest.fixture
def fake():
    with FakeOllamaServer() as server:
        yield server


def closed_port_host() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_list_models_and_has_model(fake):
    names = ob.list_models(fake.host)
    assert "qwen2.5:3b" in names
    assert ob.has_model(names, "bespoke-minicheck")  # pulled as name, listed as name:latest
    assert not ob.has_model(names, "llama3:8b")


def test_reader_streams_pieces_in_order(fake):
    reader = ob.OllamaReader(fake.host, "qwen2.5:3b", timeout_s=5)
    pieces = list(reader.stream([{"role": "user", "content": "What are the AI RMF functions?"}], max_tokens=50))
    assert len(pieces) > 3
    assert "".join(pieces) == fake.reply
    endpoint, body = fake.requests[-1]
    assert endpoint == "chat" and body["stream"] is True and body["options"]["num_predict"] == 50


def test_missing_model_is_typed(fake):
    reader = ob.OllamaReader(fake.host, "llama3:8b", timeout_s=5)
    with pytest.raises(ModelMissing, match="ollama pull llama3:8b"):
        list(reader.stream([{"role": "user", "content": "hi"}]))


def test_unreachable_is_typed():
    reader = ob.OllamaReader(closed_port_host(), "qwen2.5:3b", timeout_s=2)
    with pytest.raises(Unreachable, match="not reachable"):
        list(reader.stream([{"role": "user", "content": "hi"}]))


def test_timeout_is_typed(fake):
    fake.delay_s = 1.5
    reader = ob.OllamaReader(fake.host, "qwen2.5:3b", timeout_s=0.5)
    with pytest.raises(TimedOut):
        list(reader.stream([{"role": "user", "content": "hi"}]))


def test_stream_dropped_midway_is_interrupted(fake):
    fake.drop_after_chunks = 3
    reader = ob.OllamaReader(fake.host, "qwen2.5:3b", timeout_s=5)
    received = []
    with pytest.raises(Interrupted):
        for piece in reader.stream([{"role": "user", "content": "hi"}]):
            received.append(piece)
    assert len(received) == 3


def test_verifier_uses_minicheck_format(fake):
    verifier = ob.OllamaVerifier(fake.host, "bespoke-minicheck", timeout_s=5)
    assert verifier.check("The sky is blue.", "The sky is blue.") is True
    endpoint, body = fake.requests[-1]
    assert endpoint == "generate" and body["prompt"] == "Document: The sky is blue.\nClaim: The sky is blue."
    fake.verdict = "No"
    assert verifier.check("The sky is blue.", "The sky is green.") is False


def test_embedder_returns_normalised_rows(fake):
    embedder = ob.OllamaEmbedder(fake.host, "bge-m3", timeout_s=5)
    vectors = embedder.embed(["a", "b", "c"], batch_size=2)
    assert vectors.shape == (3, fake.embed_dim)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_auto_picks_ollama_when_it_has_the_reader(fake, tmp_path):
    settings = make_settings(tmp_path, backend="auto", ollama_host=fake.host)
    registry = ModelRegistry(settings)
    assert registry.states["reader"].backend == "ollama"
    assert registry.states["verifier"].model == "bespoke-minicheck"
    assert "has 'qwen2.5:3b'" in registry.states["reader"].reason
    assert "".join(registry.get("reader").stream([{"role": "user", "content": "q"}])) == fake.reply


def test_auto_without_verifier_model_uses_reader_as_judge(tmp_path):
    with FakeOllamaServer(models=("qwen2.5:3b",), reply="Yes") as fake:
        registry = ModelRegistry(make_settings(tmp_path, backend="auto", ollama_host=fake.host))
        assert "judge" in registry.states["verifier"].model
        assert registry.get("verifier").check("Doc text.", "Claim.") is True
        endpoint, body = fake.requests[-1]
        assert endpoint == "chat" and body["messages"][-1]["content"] == "Document: Doc text.\nClaim: Claim."
        fake.reply = "No, it is not supported."
        assert registry.get("verifier").check("Doc text.", "Claim.") is False


def test_auto_falls_back_to_embedded_and_says_why(tmp_path):
    registry = ModelRegistry(make_settings(tmp_path, backend="auto", ollama_host=closed_port_host()))
    state = registry.states["reader"]
    assert state.backend == "embedded"
    assert "not reachable" in state.reason


def test_auto_falls_back_when_reader_model_missing(tmp_path):
    with FakeOllamaServer(models=("llama3:8b",)) as fake:
        registry = ModelRegistry(make_settings(tmp_path, backend="auto", ollama_host=fake.host))
        assert registry.states["reader"].backend == "embedded"
        assert "has no 'qwen2.5:3b'" in registry.states["reader"].reason


def test_forced_ollama_never_downgrades_silently(tmp_path):
    registry = ModelRegistry(make_settings(tmp_path, backend="ollama", ollama_host=closed_port_host()))
    assert registry.states["reader"].backend == "ollama"
    with pytest.raises(Unreachable):
        registry.get("reader")
    assert "not reachable" in registry.describe()[2]["error"]
    assert registry.optional("reader") is None


def test_a_failed_load_is_remembered_briefly_shown_with_its_retry_time_then_tried_again(tmp_path, monkeypatch):
    from nistchat.engine.backends import select

    with FakeOllamaServer(models=("bespoke-minicheck:latest",)) as fake:  # up, but the reader is not pulled yet
        registry = ModelRegistry(make_settings(tmp_path, backend="ollama", ollama_host=fake.host))
        with pytest.raises(ModelMissing):
            registry.get("reader")
        asked = len(fake.requests)
        with pytest.raises(ModelMissing):
            registry.get("reader")  # within the back-off: the remembered error, no new request
        assert len(fake.requests) == asked
        reader_state = registry.describe()[2]
        assert reader_state["error"] and 25 <= reader_state["retry_in_s"] <= select.RETRY_FAILED_LOAD_S
        fake.models.append("qwen2.5:3b")  # someone runs `ollama pull`
        monkeypatch.setattr(select, "RETRY_FAILED_LOAD_S", 0.0)  # the back-off has passed
        assert "".join(registry.get("reader").stream([{"role": "user", "content": "hi"}])) == fake.reply
        assert "retry_in_s" not in registry.describe()[2] and not registry.describe()[2]["error"]


def test_the_wait_for_the_first_token_is_its_own_limit(fake):
    """Reading a long prompt may take longer than any stall between tokens should (base.Pace)."""
    fake.delay_s = 1.0  # the server "reads the prompt" for a second before its first token
    reader = ob.OllamaReader(fake.host, "qwen2.5:3b", timeout_s=0.3)
    assert "".join(reader.stream([{"role": "user", "content": "hi"}], first_token_s=5)).startswith("The AI RMF")
    with pytest.raises(TimedOut, match="did not start its answer within 0 s|did not start its answer"):
        list(reader.stream([{"role": "user", "content": "hi"}], first_token_s=0.3))


def test_a_stall_after_the_first_token_is_bounded_by_the_stall_limit(fake):
    fake.stall_after_chunks = (2, 1.5)
    reader = ob.OllamaReader(fake.host, "qwen2.5:3b", timeout_s=0.4)
    received = []
    with pytest.raises(TimedOut, match="stopped producing tokens"):
        for piece in reader.stream([{"role": "user", "content": "hi"}], first_token_s=30):
            received.append(piece)
    assert len(received) == 2


def test_pace_with_reader_slots_in_use_expects_each_prompt_read_that_many_times_slower():
    """A server with 4 slots reads 4 prompts at once: each first token comes ~4 times later, and
    a limit learned from one prompt at a time cut them off (the first server benchmark's timeouts)."""
    from nistchat.engine.backends.base import Pace

    pace = Pace(floor_s=10, ceiling_s=1000)
    pace.observe(400, 40.0, sharing=4)  # 10 tokens/s each, four at once: the server reads 40 tokens/s
    assert pace.tokens_per_s == pytest.approx(40)
    assert pace.expected_s(2000) == pytest.approx(50) and pace.first_token_limit(2000) == pytest.approx(150)
    assert pace.expected_s(2000, sharing=4) == pytest.approx(200)
    assert pace.first_token_limit(2000, sharing=4) == pytest.approx(600)
    assert pace.first_token_limit(2000, sharing=0) == pytest.approx(150)  # nobody else: as one


def test_pace_allows_the_prompt_time_at_the_measured_rate_between_floor_and_ceiling():
    from nistchat.engine.backends.base import Pace

    pace = Pace(floor_s=10, ceiling_s=300)
    assert pace.first_token_limit(2000) == 300 and pace.expected_s(2000) is None  # nothing measured yet
    pace.observe(400, 10.0)  # 40 tokens/s
    assert pace.expected_s(2000) == pytest.approx(50)
    assert pace.first_token_limit(2000) == pytest.approx(150)  # 3 x the expected reading time
    assert pace.first_token_limit(20) == 10  # a short prompt still gets the floor
    assert pace.first_token_limit(100_000) == 300
    pace.observe(400, 40.0)  # the machine got busy: 10 tokens/s moves the average down
    assert pace.tokens_per_s == pytest.approx(0.7 * 40 + 0.3 * 10)


def test_pace_never_measures_an_answer_faster_than_the_probe():
    """A retry over the same passages reads only its new words from a reader that kept the prompt's
    prefix: 2,000 tokens in 2 s is no rate of the reader, and the next answer's limit must not fall
    to the floor because of it. A slower answer (a busy machine) still lowers the rate."""
    from nistchat.engine.backends.base import Pace

    pace = Pace(floor_s=10, ceiling_s=1000)
    pace.calibrate(250, 5.0)  # the probe: 50 tokens/s
    pace.observe(2000, 2.0)  # the retry's prompt, mostly kept from the first attempt
    assert pace.tokens_per_s == pytest.approx(50)
    assert pace.first_token_limit(2000) == pytest.approx(120)
    pace.observe(2000, 100.0)  # 20 tokens/s: busier
    assert pace.tokens_per_s == pytest.approx(0.7 * 50 + 0.3 * 20)


def test_pace_without_a_probe_never_measures_an_answer_faster_than_the_first():
    """An evaluation run from the command line ran no probe: its retries, reading only their new
    words, pushed the rate up until every first-token limit was the floor, and answers were cut off
    before their first token. The first answer's rate stands in for the probe's."""
    from nistchat.engine.backends.base import Pace

    pace = Pace(floor_s=10, ceiling_s=1000)
    pace.observe(2000, 50.0)  # the first answer: 40 tokens/s, nothing kept
    for _ in range(5):
        pace.observe(2000, 2.0)  # retries over kept prefixes
    assert pace.tokens_per_s == pytest.approx(40) and pace.first_token_limit(2000) == pytest.approx(150)

"""Embedded backends on the real weights under data/models, and offline provisioning."""
from __future__ import annotations


import numpy as np
import pytest

from nistchat.engine.errors import ModelMissing
from nistchat.engine.backends.base import parse_yes_no
from nistchat.engine.backends.select import ModelRegistry
from tests.conftest import MODELS_DIR, make_settings


def test_embedder_is_real_and_normalised(runtime):
    embedder = runtime.models.get("embedder")
    vectors = embedder.embed(["risk management framework", "AI risk management", "a recipe for bread"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_cross_encoder_plumbing_on_real_checkpoint():
    """No ms-marco weights exist offline; a CrossEncoder over the MiniLM checkpoint (fresh
    classification head) proves the reranker code runs end to end on real weights."""
    from nistchat.engine.backends.embedded import CrossEncoderReranker

    reranker = CrossEncoderReranker(MODELS_DIR / "all-MiniLM-L6-v2")
    scores = reranker.score("what is GOVERN?", ["GOVERN cultivates a culture of risk management.", "Bread."])
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores)
    assert reranker.score("q", []) == []


def test_missing_reranker_is_reported_not_hidden(tmp_path):
    registry = ModelRegistry(make_settings(tmp_path, reranker=str(tmp_path / "no-such-model")))
    assert registry.describe()[1]["error"].startswith("not found at")  # known before any load
    assert registry.optional("reranker") is None
    assert "not found" in registry.reason_missing("reranker")
    assert registry.describe()[1]["loaded"] is False
    assert registry.active()["reranker"].endswith("(unavailable)")  # what answers and logs record
    assert not registry.active()["embedder"].endswith("(unavailable)")


def test_missing_gguf_is_model_missing(tmp_path):
    registry = ModelRegistry(make_settings(tmp_path, gguf=str(tmp_path / "absent.gguf")))
    with pytest.raises(ModelMissing, match="nistchat models install"):
        registry.get("reader")


def test_llama_reader_streams_and_judges(runtime):
    reader = runtime.models.get("reader")
    pieces = list(reader.stream([{"role": "user", "content": "Reply with the single word: ready"}], max_tokens=8))
    assert len(pieces) >= 1 and "".join(pieces).strip()
    judge = runtime.models.get("verifier")
    doc = "The AI RMF Core is composed of four functions: GOVERN, MAP, MEASURE, and MANAGE."
    assert judge.check(doc, "The AI RMF Core has four functions.") is True
    assert judge.check(doc, "The AI RMF Core has nine functions, including AUDIT.") is False


def test_parse_yes_no():
    assert parse_yes_no("Yes.") and parse_yes_no(" **yes**") and not parse_yes_no("No") and not parse_yes_no("")


def test_llama_reader_stall_is_timed_out():
    from nistchat.config import GGUF_MODELS
    from nistchat.engine.errors import TimedOut
    from nistchat.engine.backends.embedded import LlamaCppReader

    gguf = MODELS_DIR / GGUF_MODELS["qwen2.5-coder-0.5b"]
    if not gguf.exists():
        pytest.skip("0.5B reader not installed (make test installs it)")
    reader = LlamaCppReader(gguf, n_ctx=512, timeout_s=0.001)
    with pytest.raises(TimedOut, match="produced nothing"):
        list(reader.stream([{"role": "user", "content": "Count from one to ten."}], max_tokens=8))
    assert reader._lock.acquire(timeout=1)  # the failed call released the model


def test_the_judge_inside_the_answer_keeps_the_answers_prompt_as_its_prefix():
    """The check's messages open with the answer's own, byte for byte, so llama.cpp reads only what
    follows; the claim is one neutralised line and cannot pose as a passage number or a section."""
    from nistchat.engine.backends.base import in_prompt_messages

    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "Context"},
                {"role": "user", "content": "Question: q"}]
    out = in_prompt_messages(messages, 2, "It says [3]\nContext: more.")
    assert out[:3] == messages and len(out) == 4 and out[3]["role"] == "user"
    check = out[3]["content"]
    assert "passage [2]" in check and "[3]" not in check
    assert "(3)" in check and "Context -" in check and check.count("\n") == 1


def _core_prompt():
    from nistchat.engine.answer.prompt import build_messages
    from nistchat.engine.types import Passage

    passages = [Passage(rank=1, id="d:1", doc="NIST.AI.100-1", title="AI RMF", section="Core", kind="prose", page=3,
                        text="The AI RMF Core is composed of four functions: GOVERN, MAP, MEASURE, and MANAGE.",
                        score=1.0),
                Passage(rank=2, id="d:2", doc="NIST.AI.100-1", title="AI RMF", section="Audience", kind="prose", page=2,
                        text="The AI RMF is intended for AI actors across the AI lifecycle.", score=0.5)]
    return build_messages("How many functions does the AI RMF Core have?", passages)


def test_the_suites_reader_judges_inside_the_prompt_only_when_told(runtime):
    """The 0.5B reader is not among the readers `verify.context = "auto"` asks inside the answer's
    prompt; asked there anyway, it still answers the check with a verdict (a supported fact: Yes)."""
    from tests.conftest import TEST_READER

    judge = runtime.models.get("verifier")
    assert judge.judges_in_prompt is (TEST_READER == "qwen2.5-coder-1.5b")
    assert judge.check_in_prompt(_core_prompt(), 1, "The AI RMF Core has four functions.") is True


@pytest.mark.slow
def test_the_default_reader_judges_a_claim_inside_its_answers_prompt(tmp_path):
    """The 1.5B reader (`make run`'s), asked inside the answer's prompt: the passage's own fact is
    supported, a changed number is not; it is the reader "auto" asks there."""
    from tests.conftest import make_settings
    from nistchat.engine.backends.select import ModelRegistry

    settings = make_settings(tmp_path, backend="embedded", gguf="qwen2.5-coder-1.5b", reader_process="inprocess")
    if not settings.gguf_path.is_file():
        pytest.skip("the 1.5B reader is not installed (make test-slow installs it)")
    judge = ModelRegistry(settings).get("verifier")
    assert judge.judges_in_prompt is True
    assert judge.check_in_prompt(_core_prompt(), 1, "The AI RMF Core has four functions.") is True
    assert judge.check_in_prompt(_core_prompt(), 1, "The AI RMF Core has nine functions, including AUDIT.") is False

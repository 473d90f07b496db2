"""The OpenAI-compatible backend against a real server: `python -m llama_cpp.server` on the 0.5B
weights (the session's `openai_server`), as reader and verifier, through the pipeline and the
live site. The server is killed mid-answer, stopped, and asked for a model it does not have; each
gives its error event, the partial text is stored, and the next question works once it is back.
The SSE parser's answers to lines no real server sends are tested on the lines themselves."""
from __future__ import annotations

import pytest

from nistchat.engine.backends import openai as ob
from nistchat.engine.backends.select import ModelRegistry
from nistchat.engine.errors import Interrupted, ModelMissing, TimedOut, Unreachable
from nistchat.engine.runtime import Runtime
from nistchat.models import Message

from tests.conftest import make_settings
from tests.openai_server import API_KEY, MODEL_ALIAS, free_port
from tests.web_support import admin_status, ask, build_app, served, stored

QUESTION = "What are the four functions of the AI RMF Core?"
HI = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="session")
def key_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("openai-key") / "api_key"
    path.write_text(API_KEY + "\n", encoding="utf-8")
    return path


def openai_settings(server, key_file, tmp_path=None, **extra):
    base = {"backend": "openai", "openai_base_url": server.base_url, "openai_model": MODEL_ALIAS,
            "openai_api_key_env": "NISTCHAT_TEST_UNSET_KEY", "openai_api_key_file": str(key_file)}
    return make_settings(tmp_path, **{**base, **extra})


def on_server(runtime, server, key_file, **backends) -> Runtime:
    """The session's engine (its index, loaded once) with the real server as reader and verifier."""
    return runtime.derived({"backends": {"backend": "openai", "openai_base_url": server.base_url,
                                         "openai_model": MODEL_ALIAS, "openai_api_key_env": "NISTCHAT_TEST_UNSET_KEY",
                                         "openai_api_key_file": str(key_file), **backends},
                            "answer": {"max_tokens": 24, "k": 2, "context_tokens": 300},
                            "verify": {"mode": "always", "max_checks": 1, "per_sentence": 1}})


@pytest.fixture(scope="module")
def server_runtime(runtime, openai_server, key_file):
    return on_server(runtime, openai_server, key_file)


@pytest.fixture
def endpoint(openai_server):
    return ob.Endpoint(openai_server.base_url, API_KEY, timeout_s=60)


# -- the protocol, against the real server
def test_the_server_lists_its_model_and_a_missing_one_is_named(endpoint):
    assert ob.list_models(endpoint) == [MODEL_ALIAS]
    ob.check_model(endpoint, MODEL_ALIAS)
    with pytest.raises(ModelMissing, match=f"has no model 'gpt-9'.*lists: {MODEL_ALIAS}"):
        ob.check_model(endpoint, "gpt-9")


def test_the_reader_streams_pieces_and_judges_claims_through_the_server(endpoint, openai_server, key_file, tmp_path):
    reader = ob.OpenAIReader(endpoint, MODEL_ALIAS)
    pieces = list(reader.stream(HI, max_tokens=8, temperature=0.0))
    assert len(pieces) > 1 and "".join(pieces).strip()
    document = "The AI RMF Core has four functions: Govern, Map, Measure and Manage."
    judge = ModelRegistry(openai_settings(openai_server, key_file, tmp_path)).get("verifier")  # no verifier model set
    assert judge.name == f"{MODEL_ALIAS} (as Yes/No judge)"
    assert judge.check(document, "The AI RMF Core has four functions.") is True
    assert judge.check(document, "The AI RMF Core has seven functions.") is False


def test_a_wrong_or_missing_api_key_is_a_plain_message_and_the_key_is_never_shown(openai_server, endpoint):
    for key in ("", "wrong-key"):
        with pytest.raises(Unreachable, match="refused the API key \\(HTTP 401\\)") as refused:
            list(ob.OpenAIReader(ob.Endpoint(openai_server.base_url, key), MODEL_ALIAS).stream(HI, max_tokens=2))
        assert API_KEY not in refused.value.message
    assert API_KEY not in repr(endpoint)
    assert "".join(ob.OpenAIReader(endpoint, MODEL_ALIAS).stream(HI, max_tokens=2))  # the right key still works


def test_an_http_error_and_a_stream_cut_short_are_plain_messages_and_the_next_call_works(endpoint, openai_server):
    reader = ob.OpenAIReader(endpoint, MODEL_ALIAS)
    too_long = [{"role": "user", "content": "word " * 3000}]  # more than the server's 2048-token context
    if openai_server.kind == "llama_cpp.server":
        with pytest.raises(Unreachable, match="answered with an error \\(HTTP 500"):  # it rejects the body
            list(reader.stream([{"role": "wizard", "content": "hi"}], max_tokens=2))
        with pytest.raises(Interrupted, match="ended before it was complete"):  # it starts, then breaks off
            list(reader.stream(too_long, max_tokens=2))
    else:  # llama-server measures the prompt before it streams, and says so
        with pytest.raises(Unreachable, match="answered with an error \\(HTTP 400: .*exceeds the available context"):
            list(reader.stream(too_long, max_tokens=2))
    assert "".join(reader.stream(HI, max_tokens=4))


def test_a_base_url_that_is_not_the_api_root_says_so(openai_server):
    with pytest.raises(Unreachable, match="API root, usually ending in /v1"):
        ob.list_models(ob.Endpoint(openai_server.base_url.removesuffix("/v1") + "/v2", API_KEY))


def test_nothing_listening_is_unreachable():
    endpoint = ob.Endpoint(f"http://127.0.0.1:{free_port()}/v1", timeout_s=2)
    with pytest.raises(Unreachable, match="not reachable"):
        list(ob.OpenAIReader(endpoint, MODEL_ALIAS).stream(HI))


# -- the stream parser on lines no real server here sends
def test_sse_comments_and_other_fields_are_skipped_and_data_is_read():
    e = ob.Endpoint("http://server/v1")
    assert ob._sse_data(e, "") is None and ob._sse_data(e, ": ping - 2026-01-01") is None
    assert ob._sse_data(e, "event: message") is None and ob._sse_data(e, "id: 4") is None
    assert ob._sse_data(e, "data: [DONE]") == "[DONE]" and ob._sse_data(e, "data:{}") == "{}"
    assert ob._delta(e, '{"choices":[{"delta":{"content":"Hi"},"finish_reason":null}]}') == ("Hi", None)
    assert ob._delta(e, '{"choices":[{"delta":{},"finish_reason":"stop"}]}') == ("", "stop")
    assert ob._delta(e, '{"choices":[],"usage":{"total_tokens":3}}') == ("", None)


@pytest.mark.parametrize("line, said", [
    ("<html>Bad gateway</html>", "not server-sent events"),
    ("data: {not json", "malformed stream line"),
    ('data: {"object": "list"}', "not a chat completion chunk"),
    ('data: {"error": {"message": "out of memory"}}', "reported an error mid-answer: out of memory"),
])
def test_a_malformed_stream_line_is_a_plain_message(line, said):
    e = ob.Endpoint("http://server/v1")
    with pytest.raises(Interrupted, match=said):
        payload = ob._sse_data(e, line)
        ob._delta(e, payload)


def test_the_api_key_comes_from_the_environment_or_a_file(tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("from-file\n", encoding="utf-8")
    assert ob.read_api_key("MY_KEY", key_file, {"MY_KEY": " from-env "}) == "from-env"
    assert ob.read_api_key("MY_KEY", key_file, {}) == "from-file"
    assert ob.read_api_key("MY_KEY", None, {}) == ""
    with pytest.raises(Unreachable, match="cannot be read"):
        ob.read_api_key("MY_KEY", tmp_path / "absent", {})


# -- choosing the backend
def test_auto_takes_the_server_when_ollama_is_absent_and_says_why(openai_server, key_file, tmp_path):
    closed = f"http://127.0.0.1:{free_port()}"
    registry = ModelRegistry(openai_settings(openai_server, key_file, tmp_path, backend="auto", ollama_host=closed))
    reader = registry.states["reader"]
    assert reader.backend == "openai" and reader.model == MODEL_ALIAS and reader.location == openai_server.base_url
    assert "Ollama is not reachable" in reader.reason and f"has '{MODEL_ALIAS}'" in reader.reason
    assert registry.states["verifier"].backend == "openai"
    missing = ModelRegistry(openai_settings(openai_server, key_file, tmp_path, backend="auto", ollama_host=closed,
                                            openai_model="gpt-9"))
    assert missing.states["reader"].backend == "embedded"
    assert "has no 'gpt-9'" in missing.states["reader"].reason


def test_a_wrong_model_is_found_before_any_answer_and_says_what_the_server_has(openai_server, key_file, tmp_path):
    wrong = ModelRegistry(openai_settings(openai_server, key_file, tmp_path, openai_model="gpt-9"))
    with pytest.raises(ModelMissing):
        wrong.get("reader")
    reader = wrong.describe()[2]
    assert reader["role"] == "reader" and "'gpt-9'" in reader["error"] and MODEL_ALIAS in reader["error"]


# -- through the pipeline and the live site (short answers, one check: a few seconds each)
def test_an_answer_streams_through_the_pipeline_with_the_server_as_reader_and_verifier(server_runtime, openai_server):
    result = server_runtime.models.self_test()  # as `nistchat serve` makes it at start
    assert result["state"] == "passed" and result["roles"]["reader"]["server"] == openai_server.base_url
    events = list(server_runtime.answer(QUESTION))
    kinds = [e.type for e in events]
    assert kinds[0] == "sources" and kinds.count("token") > 1 and kinds[-1] == "final", kinds
    final = events[-1].to_dict()
    assert final["backend"]["reader"] == f"openai:{MODEL_ALIAS}"
    assert final["backend"]["verifier"] == f"openai:{MODEL_ALIAS} (as Yes/No judge)"
    first = final["attempts"][0]
    assert first["text"].strip() and (first["verified"] or first["dont_know"])
    if first["verified"]:  # every sentence checked: each verdict came from the server
        assert "verdict" in kinds and first["supported"] + first["unsupported"] >= 1


def test_a_wrong_model_name_is_a_model_missing_error_event(runtime, openai_server, key_file, tmp_path):
    app = build_app(tmp_path, on_server(runtime, openai_server, key_file, openai_model="gpt-9"))
    with served(app) as client:
        events = ask(client, QUESTION)
        error = next(e for e in events if e["type"] == "error")
        assert error["kind"] == "model_missing" and "gpt-9" in error["message"] and MODEL_ALIAS in error["message"]
        assert events[-1]["type"] == "stored"
        assert client.get("/").status_code == 200


@pytest.fixture
def unverified(server_runtime):
    """The same engine and models, without verification: the tests below are about the stream."""
    return server_runtime.derived({"verify": {"mode": "never"}})


def test_killing_the_server_mid_answer_keeps_the_partial_text_and_the_next_question_works(
        unverified, openai_server, tmp_path):
    app = build_app(tmp_path, unverified)
    killed = []

    def kill_once(_event):
        if not killed:
            killed.append(True)
            openai_server.kill()

    with served(app) as client:
        try:
            events = ask(client, QUESTION, on_token=kill_once)
        finally:
            openai_server.start()
        assert killed, [e["type"] for e in events]
        error = next(e for e in events if e["type"] == "error")
        assert error["kind"] == "interrupted" and error["partial"].strip() and error["incomplete"] is True
        row = stored(app, Message, events[0]["message_id"])
        assert row.status == "error" and row.incomplete and row.answer == error["partial"]
        page = client.get("/")
        assert page.status_code == 200 and "The answer stopped part-way" in page.text
        again = ask(client, QUESTION)
        assert any(e["type"] == "final" for e in again), [e["type"] for e in again]


def test_a_stopped_server_is_unreachable_the_pages_keep_working_and_it_is_used_again_once_back(
        unverified, openai_server, tmp_path):
    app = build_app(tmp_path, unverified)
    unverified.models.get("reader")  # the site has been answering; then the server goes away
    with served(app) as client:
        openai_server.stop()
        try:
            events = ask(client, QUESTION)
            error = next(e for e in events if e["type"] == "error")
            assert error["kind"] == "unreachable" and "not reachable" in error["message"]
            assert client.get("/").status_code == 200 and client.get("/history").status_code == 200
            status = admin_status(client)
            assert API_KEY not in str(status)  # the key is never on /status
            assert status["queue"]["slots"] == 1 and status["queue"]["serving"] == 0
        finally:
            openai_server.start()
        again = ask(client, QUESTION)
        assert any(e["type"] == "final" for e in again), [e["type"] for e in again]


def test_a_wait_longer_than_the_limits_is_timed_out(openai_server):
    def prompt(words: str) -> list[dict]:  # reading it takes > 50 ms; each its own, so no cached prefix helps
        return [{"role": "user", "content": f"Summarise: {words * 40}"}]

    silent = ob.Endpoint(openai_server.base_url, API_KEY, timeout_s=0.05)  # no byte at all for that long
    with pytest.raises(TimedOut, match="(did not start its answer within|sent nothing for) 0.05 s"):
        list(ob.OpenAIReader(silent, MODEL_ALIAS).stream(prompt("risk management "), max_tokens=2))
    patient = ob.Endpoint(openai_server.base_url, API_KEY, timeout_s=60)  # the first token's own limit
    with pytest.raises(TimedOut, match="did not start its answer within 0.05 s"):
        list(ob.OpenAIReader(patient, MODEL_ALIAS).stream(prompt("trustworthy systems "), max_tokens=2,
                                                          first_token_s=0.05))


def test_two_answers_at_once_hold_two_slots_and_status_and_metrics_show_them(unverified, openai_server, tmp_path):
    import threading
    import time

    import httpx

    from nistchat.engine.backends.queue import ReaderQueue

    two = unverified.derived({"queue": {"reader_slots": 2}})
    two.queue = ReaderQueue(12, 2, slots=two.settings.queue.reader_slots)  # its own queue: derived shares one
    app = build_app(tmp_path, two)
    answers: list[list[dict]] = [[], []]

    def browser(events: list) -> None:
        with httpx.Client(base_url=base, timeout=300) as own:
            ask(own, QUESTION, events=events)

    def shown(in_use: int) -> bool:
        """The same count of slots in use on /status, /metrics, /metrics.json and /metrics.prom."""
        queue = client.get("/status", params={"format": "json"}).json()["queue"]
        metrics = client.get("/metrics.json").json()["queue"]
        page, prom = client.get("/metrics").text, client.get("/metrics.prom").text
        return (queue["serving"] == metrics["serving"] == in_use and queue["slots"] == metrics["slots"] == 2
                and f"{in_use} of 2 slots in use" in page and f"nistchat_reader_slots_in_use {in_use}\n" in prom
                and "nistchat_reader_slots 2\n" in prom)

    with served(app) as client:
        base = str(client.base_url)
        assert admin_status(client)["queue"]["slots"] == 2  # logs the client in as admin
        assert shown(0)
        browsers = [threading.Thread(target=browser, args=(events,)) for events in answers]
        for b in browsers:
            b.start()
        both_shown, server_busy = False, 0.0
        while any(b.is_alive() for b in browsers):
            both_shown = both_shown or shown(2)
            if openai_server.parallel > 1:  # llama-server: both answers generated at once, not queued there
                server_busy = max(server_busy, openai_server.metrics().get("requests_processing", 0.0))
            time.sleep(0.1)
        for b in browsers:
            b.join()
        assert both_shown, answers
        assert openai_server.parallel == 1 or server_busy == 2, server_busy
        assert [events[-1]["type"] for events in answers] == ["stored", "stored"], answers
        assert all(any(e["type"] == "final" for e in events) for events in answers)
        assert shown(0)

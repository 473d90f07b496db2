"""Reader and verifier served by an OpenAI-compatible server (vLLM, llama.cpp's `llama-server`,
`python -m llama_cpp.server`, LM Studio, TGI, LocalAI, Ollama's /v1), over its chat API.

Why httpx and not the `openai` package: two endpoints are all we use (`GET /models` and a
streamed `POST /chat/completions`), httpx is already a dependency, and reading the SSE lines
ourselves is what lets every way a stream can go wrong (an HTTP error, a line that is not SSE, a
stream cut before `[DONE]`) become one typed BackendError with a message for a person. The API key
lives in the `Endpoint` only: it is sent as a header and never put in a message, a state or a log.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

import httpx

from ..errors import BackendError, Interrupted, ModelMissing, TimedOut, Unreachable
from .base import minicheck_prompt, paced, parse_yes_no

CONNECT_TIMEOUT_S = 5.0
DETAIL_CHARS = 300  # of a server's error body, in the message


@dataclass(frozen=True)
class Endpoint:
    """Where the server is: `base_url` ends in the API root (`http://host:8000/v1`)."""
    base_url: str
    api_key: str = field(default="", repr=False)
    timeout_s: float = 120.0

    def url(self, path: str) -> str:
        return f"{self.base_url.rstrip('/')}/{path.lstrip('/')}"

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def timeout(self, read_s: float | None = None) -> httpx.Timeout:
        """`read_s` bounds a stall: no byte from the server for that long."""
        read = self.timeout_s if read_s is None else read_s
        return httpx.Timeout(read, connect=min(CONNECT_TIMEOUT_S, read))


def read_api_key(env_name: str, key_file: Path | None, environ: Mapping[str, str] | None = None) -> str:
    """The key from the named environment variable, else from the file (first line), else ''."""
    environ = os.environ if environ is None else environ
    if env_name and environ.get(env_name, "").strip():
        return environ[env_name].strip()
    if key_file is not None:
        try:
            return key_file.read_text(encoding="utf-8").strip().splitlines()[0].strip()
        except (OSError, IndexError, UnicodeDecodeError) as exc:
            raise Unreachable(f"The API key file {key_file} cannot be read ({exc.__class__.__name__}).") from None
    return ""


def _detail(response: httpx.Response) -> str:
    """The server's own words about an error: OpenAI's {"error": {"message"}}, FastAPI's
    {"detail"}, or the start of the body."""
    try:
        body = response.read().decode("utf-8", "replace")
    except httpx.HTTPError:
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        return " ".join(body.split())[:DETAIL_CHARS]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:DETAIL_CHARS]
    if isinstance(error, str):
        return error[:DETAIL_CHARS]
    if isinstance(data, dict) and data.get("detail"):
        return str(data["detail"])[:DETAIL_CHARS]
    return " ".join(body.split())[:DETAIL_CHARS]


def _status_error(endpoint: Endpoint, model: str, response: httpx.Response) -> BackendError:
    code, detail = response.status_code, _detail(response)
    said = f": {detail}" if detail else ""
    if code in (401, 403):
        return Unreachable(f"The model server at {endpoint.base_url} refused the API key (HTTP {code}). "
                           "Check NISTCHAT_OPENAI_API_KEY or backends.openai_api_key_file.")
    if code == 404:
        return ModelMissing(f"The model server at {endpoint.base_url} has no model {model!r} (HTTP 404{said}).")
    return Unreachable(f"The model server at {endpoint.base_url} answered with an error (HTTP {code}{said}).")


def _unreachable(endpoint: Endpoint, exc: Exception) -> Unreachable:
    return Unreachable(f"The model server is not reachable at {endpoint.base_url} ({exc.__class__.__name__}). "
                       "Start it, or set backends.openai_base_url to where it listens.")


def list_models(endpoint: Endpoint, timeout_s: float = 2.0) -> list[str]:
    """The model ids `GET /models` lists; raises Unreachable when the server does not answer."""
    try:
        response = httpx.get(endpoint.url("models"), headers=endpoint.headers(), timeout=endpoint.timeout(timeout_s))
    except httpx.TimeoutException:
        raise TimedOut(f"The model server at {endpoint.base_url} did not list its models in {timeout_s:g} s.") from None
    except httpx.HTTPError as exc:
        raise _unreachable(endpoint, exc) from None
    if response.status_code == 404:
        raise Unreachable(f"{endpoint.url('models')} answered HTTP 404: backends.openai_base_url should be the "
                          "server's API root, usually ending in /v1.")
    if response.status_code >= 400:
        raise _status_error(endpoint, "-", response)
    try:
        rows = response.json()["data"]
        return [str(row["id"]) for row in rows]
    except (ValueError, KeyError, TypeError):
        raise Unreachable(f"The server at {endpoint.base_url} is not an OpenAI-compatible API: "
                          "GET /models did not return a model list.") from None


def check_model(endpoint: Endpoint, model: str, timeout_s: float = 5.0) -> None:
    """ModelMissing unless the server lists `model`. Needed before any answer: some servers
    (llama_cpp.server) answer a request for an unknown model with the one they have."""
    available = list_models(endpoint, timeout_s)
    if not model:
        raise ModelMissing(f"No model named for the server at {endpoint.base_url}: set backends.openai_model "
                           f"to one it lists ({', '.join(available) or 'none'}).")
    if model not in available:
        raise ModelMissing(f"The model server at {endpoint.base_url} has no model {model!r} "
                           f"(it lists: {', '.join(available) or 'none'}). Set backends.openai_model to one of them.")


def stream_chat(endpoint: Endpoint, model: str, messages: list[dict], *, max_tokens: int,
                temperature: float, first_token_s: float | None = None) -> Iterator[str]:
    """Text pieces of one streamed chat completion. Waiting longer than `first_token_s` (default
    `endpoint.timeout_s`) for the first piece, or `endpoint.timeout_s` between two, is TimedOut
    (`base.paced`; keep-alive comments are not progress); a stream that breaks, carries an error,
    or ends without `[DONE]` is Interrupted."""
    first_limit = first_token_s or endpoint.timeout_s

    def timed_out(first: bool, waited: float) -> TimedOut:
        what = "did not start its answer" if first else "stopped producing text"
        return TimedOut(f"The model server {what} within {waited:g} s (model {model}).")

    yield from paced(_pieces(endpoint, model, messages, max_tokens, temperature, max(first_limit, endpoint.timeout_s)),
                     first_token_s=first_limit, stall_s=endpoint.timeout_s, on_timeout=timed_out)


def _pieces(endpoint: Endpoint, model: str, messages: list[dict], max_tokens: int, temperature: float,
            read_s: float) -> Iterator[str]:
    body = {"model": model, "messages": messages, "stream": True, "max_tokens": max_tokens,
            "temperature": temperature}
    finished = complete = False  # [DONE] came; a chunk said why the answer ended
    try:
        with httpx.stream("POST", endpoint.url("chat/completions"), json=body, headers=endpoint.headers(),
                          timeout=endpoint.timeout(read_s)) as response:
            if response.status_code >= 400:
                raise _status_error(endpoint, model, response)
            try:
                for line in response.iter_lines():
                    payload = _sse_data(endpoint, line)
                    if payload is None:
                        continue
                    if payload == "[DONE]":
                        finished = True
                        break
                    piece, reason = _delta(endpoint, payload)
                    complete = complete or bool(reason)
                    if piece:
                        yield piece
            except httpx.TimeoutException:
                raise TimedOut(f"The model server sent nothing for {read_s:g} s (model {model}).") from None
            except (httpx.TransportError, httpx.StreamError) as exc:
                raise Interrupted(f"The model server stopped mid-answer ({exc.__class__.__name__}).") from None
    except BackendError:
        raise
    except httpx.ConnectTimeout as exc:
        raise _unreachable(endpoint, exc) from None
    except httpx.TimeoutException:
        raise TimedOut(f"The model server at {endpoint.base_url} did not answer in {endpoint.timeout_s:.0f} s.") from None
    except httpx.HTTPError as exc:
        raise _unreachable(endpoint, exc) from None
    if not finished:
        raise Interrupted("The model server's answer stream ended before it was complete (no [DONE]).")
    if not complete:  # llama_cpp.server cuts a stream this way when another request arrives
        raise Interrupted("The model server ended the answer early without a finish reason (with "
                          "llama_cpp.server: start it with --interrupt_requests False).")


def _sse_data(endpoint: Endpoint, line: str) -> str | None:
    """The payload of a `data:` line; None for blank lines, comments and the other SSE fields."""
    if not line or line.startswith(":"):
        return None
    name, sep, value = line.partition(":")
    if not sep or name not in ("data", "event", "id", "retry"):
        raise Interrupted(f"The model server at {endpoint.base_url} sent a line that is not server-sent events: "
                          f"{line[:80]!r}.")
    if name != "data":
        return None
    return value[1:] if value.startswith(" ") else value


def _delta(endpoint: Endpoint, payload: str) -> tuple[str, str | None]:
    """(text, finish_reason) of one chunk; a chunk that carries an error or is not a chat chunk
    ends the answer with the server's words."""
    try:
        chunk = json.loads(payload)
    except ValueError:
        raise Interrupted(f"The model server at {endpoint.base_url} sent a malformed stream line: "
                          f"{payload[:80]!r}.") from None
    if isinstance(chunk, dict) and chunk.get("error"):
        error = chunk["error"]
        said = error.get("message", "") if isinstance(error, dict) else str(error)
        raise Interrupted(f"The model server reported an error mid-answer: {said[:DETAIL_CHARS]}")
    try:
        choice = chunk["choices"][0] if chunk["choices"] else {}
        delta = choice.get("delta") or {}
        return str(delta.get("content") or ""), choice.get("finish_reason")
    except (KeyError, TypeError, AttributeError):
        raise Interrupted(f"The model server at {endpoint.base_url} sent a stream line that is not a chat "
                          f"completion chunk: {payload[:80]!r}.") from None


class OpenAIReader:
    def __init__(self, endpoint: Endpoint, model: str):
        self.endpoint, self.name = endpoint, model

    def stream(self, messages: list[dict], *, max_tokens: int = 512, temperature: float = 0.1,
               first_token_s: float | None = None) -> Iterator[str]:
        """`first_token_s` bounds the wait for the first piece (the prompt's reading); the
        endpoint's `timeout_s` bounds a stall between two."""
        yield from stream_chat(self.endpoint, self.name, messages, max_tokens=max_tokens, temperature=temperature,
                               first_token_s=first_token_s)

    def self_test(self) -> dict:
        """The model check (`GET /models` lists it), then a one-token answer as every answer makes one."""
        from .base import SELF_TEST_MESSAGES

        check_model(self.endpoint, self.name)
        "".join(self.stream(SELF_TEST_MESSAGES, max_tokens=1, temperature=0.0))
        return {"server": self.endpoint.base_url}


class OpenAIVerifier:
    """A MiniCheck-style judge served by the same kind of server: Yes or No to "Document: … Claim: …"."""

    def __init__(self, endpoint: Endpoint, model: str):
        self.endpoint, self.name = endpoint, model

    def check(self, document: str, claim: str) -> bool:
        messages = [{"role": "user", "content": minicheck_prompt(document, claim)}]
        return parse_yes_no("".join(stream_chat(self.endpoint, self.name, messages, max_tokens=3, temperature=0.0)))

"""The OpenAI-compatible provider against a real HTTP server on the loopback interface.

The server is Python's own `http.server`, started by the test on 127.0.0.1 with a free port; each
test sets what it answers. Nothing is mocked between the provider and the socket.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from lantern.embeddings.provider import embed_checked
from lantern.embeddings.registry import resolve_provider
from lantern.embeddings.remote import OpenAICompatibleProvider
from lantern.errors import EmbeddingFailed, InvalidInput

KEY = "sk-test-0123456789abcdef"


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    delay: float = 0.0


@dataclass
class Server:
    """What the server received, and the function that decides what it answers."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    answer: Callable[[dict[str, Any]], Answer] = lambda request: Answer(404)


def vectors_for(texts: list[str], dimension: int = 4) -> list[list[float]]:
    """Deterministic, not unit-length vectors: the provider must scale them."""
    return [[float(len(text)), 1.0, *([2.0] * (dimension - 2))] for text in texts]


def embeddings_answer(dimension: int = 4, *, reverse: bool = False) -> Callable[..., Answer]:
    def answer(request: dict[str, Any]) -> Answer:
        texts = request["json"]["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": vector}
            for i, vector in enumerate(vectors_for(texts, dimension))
        ]
        if reverse:
            data.reverse()  # the index, not the order, says which text a vector belongs to
        body = {"object": "list", "data": data, "model": request["json"]["model"]}
        return Answer(body=json.dumps(body).encode())

    return answer


class _QuietServer(ThreadingHTTPServer):
    """Handler threads die with the test; a client that hung up (the timeout test) is normal."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    for proxy in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    state = Server(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            request = {
                "path": self.path,
                "headers": dict(self.headers.items()),
                "json": json.loads(raw),
            }
            state.requests.append(request)
            answer = state.answer(request)
            time.sleep(answer.delay)
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = _QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def provider_for(server: Server, **kwargs: Any) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(url=server.url, model="nomic-embed-text", **kwargs)


def test_vectors_come_back_normalised_in_input_order(server: Server) -> None:
    server.answer = embeddings_answer(reverse=True)
    provider = provider_for(server)
    vectors = embed_checked(provider, ["a", "abc", "abcdefg"])
    expected = np.array(vectors_for(["a", "abc", "abcdefg"]), dtype=np.float64)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 4)
    assert np.allclose(vectors, expected, atol=1e-6)
    (request,) = server.requests
    assert request["path"] == "/v1/embeddings"
    assert request["json"] == {"model": "nomic-embed-text", "input": ["a", "abc", "abcdefg"]}
    assert request["headers"]["Content-Type"] == "application/json"
    assert "Authorization" not in request["headers"]


def test_the_model_id_is_marked_remote(server: Server) -> None:
    provider = provider_for(server)
    assert (provider.name, provider.model) == ("openai-compatible", "remote:nomic-embed-text")
    assert server.requests == []  # building the provider sends nothing


def test_the_dimension_is_learnt_from_the_server_when_not_configured(server: Server) -> None:
    server.answer = embeddings_answer(dimension=6)
    provider = provider_for(server)
    assert provider.dimension == 6
    assert [r["json"]["input"] for r in server.requests] == [["dimension"]]
    provider.embed(["more"])
    assert provider.dimension == 6 and len(server.requests) == 2


def test_texts_go_in_batches_and_empty_texts_are_not_sent(server: Server) -> None:
    server.answer = embeddings_answer()
    provider = provider_for(server, batch_size=2)
    vectors = provider.embed(["one", "", "three", "  ", "five", "six"])
    assert [r["json"]["input"] for r in server.requests] == [["one", "three"], ["five", "six"]]
    assert np.linalg.norm(vectors, axis=1).round(5).tolist() == [1, 0, 1, 0, 1, 1]
    assert provider.embed([]).shape == (0, 4)


def test_the_key_is_sent_as_a_bearer_token_from_the_environment(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.answer = embeddings_answer()
    monkeypatch.setenv("LANTERN_EMBED_URL", server.url)
    monkeypatch.setenv("LANTERN_EMBED_REMOTE_MODEL", "text-embedding-3-small")
    monkeypatch.setenv("LANTERN_EMBED_API_KEY", KEY)
    monkeypatch.setenv("LANTERN_EMBED_MODEL", "openai-compatible")
    provider = resolve_provider()
    assert provider.model == "remote:text-embedding-3-small"
    assert KEY not in repr(provider) and KEY not in str(vars(provider).get("endpoint"))
    provider.embed(["hello"])
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"


def _failure(provider: OpenAICompatibleProvider, texts: list[str] | None = None) -> str:
    with pytest.raises(EmbeddingFailed) as raised:
        provider.embed(texts or ["hello"])
    message = raised.value.message
    assert "\n" not in message and KEY not in message
    return message


def test_an_http_error_is_one_line_with_the_servers_reason(server: Server) -> None:
    error = {"error": {"message": f"model 'nomic-embed-text' not found (key {KEY})"}}
    server.answer = lambda request: Answer(404, json.dumps(error).encode())
    message = _failure(provider_for(server, api_key=KEY))
    assert message == (
        f"the embedding server at {server.url}/embeddings answered HTTP 404 Not Found: "
        "model 'nomic-embed-text' not found (key ***)"
    )


def test_an_http_error_without_a_json_body_shows_its_text_cut_short(server: Server) -> None:
    server.answer = lambda request: Answer(
        500, b"<html>\n" + b"x" * 500, {"Content-Type": "text/html"}
    )
    message = _failure(provider_for(server))
    assert message.startswith(
        f"the embedding server at {server.url}/embeddings answered HTTP 500 "
        "Internal Server Error: <html> xxx"
    )
    assert message.endswith("…") and len(message) < 320


def test_a_malformed_body_is_refused(server: Server) -> None:
    server.answer = lambda request: Answer(body=b'{"data": [')
    assert _failure(provider_for(server)).endswith("sent a response that is not JSON")


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        ({"object": "list"}, 'sent JSON without a "data" list'),
        ([1, 2], 'sent JSON without a "data" list'),
        ({"data": []}, "sent 0 vectors for 1 texts"),
        ({"data": ["x"]}, "sent data item 0 that is not an object"),
        ({"data": [{"index": 3, "embedding": [1.0]}]}, "sent data item 0 with a bad index 3"),
        ({"data": [{"embedding": "AAAA"}]}, 'without an "embedding" list of numbers'),
        ({"data": [{"embedding": [1.0, "2"]}]}, "holding something other than numbers"),
        ({"data": [{"embedding": [1.0, True]}]}, "holding something other than numbers"),
        ({"data": [{"embedding": [1.0, 1e400]}]}, "holding a value that is not a finite"),
    ],
)
def test_an_unexpected_shape_is_refused(server: Server, body: Any, complaint: str) -> None:
    server.answer = lambda request: Answer(body=json.dumps(body).encode())
    message = _failure(provider_for(server))
    assert message.startswith(f"the embedding server at {server.url}/embeddings ")
    assert complaint in message


def test_a_vector_of_the_wrong_dimension_is_refused(server: Server) -> None:
    server.answer = embeddings_answer(dimension=4)
    message = _failure(provider_for(server, dimension=768))
    assert message.endswith("sent a 4-dimension vector; expected 768")

    learnt = provider_for(server)
    learnt.embed(["first"])
    server.answer = embeddings_answer(dimension=5)
    assert _failure(learnt).endswith("sent a 5-dimension vector; expected 4")


def test_vectors_of_mixed_lengths_in_one_answer_are_refused(server: Server) -> None:
    data = [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0, 0.0, 0.0]}]
    server.answer = lambda request: Answer(body=json.dumps({"data": data}).encode())
    assert _failure(provider_for(server), ["a", "b"]).endswith(
        "sent a 3-dimension vector; expected 2"
    )


def test_a_slow_server_times_out(server: Server) -> None:
    server.answer = lambda request: Answer(body=b"{}", delay=1.0)
    started = time.monotonic()
    message = _failure(provider_for(server, timeout=0.2))
    assert message.endswith("did not answer within 0.2 s")
    assert time.monotonic() - started < 0.9


def test_a_server_that_is_not_there_is_one_line() -> None:
    # A port that was free a moment ago: nothing listens on it.
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAICompatibleProvider(url=f"http://127.0.0.1:{port}/v1", model="m")
    message = _failure(provider)
    assert message == (
        f"the embedding server at http://127.0.0.1:{port}/v1/embeddings cannot be reached: "
        "Connection refused"
    )


def test_a_redirect_is_not_followed(server: Server) -> None:
    server.answer = lambda request: Answer(307, b"", {"Location": "http://127.0.0.2:9/steal"})
    message = _failure(provider_for(server, api_key=KEY))
    assert "answered HTTP 307" in message
    assert len(server.requests) == 1


def test_a_query_string_is_kept_but_never_shown(server: Server) -> None:
    server.answer = lambda request: Answer(503, b"")
    provider = OpenAICompatibleProvider(url=server.url + "?api-key=secret", model="m")
    message = _failure(provider)
    assert message == (
        f"the embedding server at {server.url}/embeddings answered HTTP 503 Service Unavailable"
    )
    assert server.requests[0]["path"] == "/v1/embeddings?api-key=secret"


def test_credentials_in_the_url_are_refused_without_being_echoed() -> None:
    with pytest.raises(InvalidInput) as raised:
        OpenAICompatibleProvider(url="http://user:secret@127.0.0.1:1/v1", model="m")
    assert "secret" not in raised.value.message
    assert raised.value.message == (
        "LANTERN_EMBED_URL must not hold a user name or password; "
        "put a key in LANTERN_EMBED_API_KEY"
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "needs the server's URL: set LANTERN_EMBED_URL"),
        ({"LANTERN_EMBED_URL": "ftp://host/v1"}, "must be an http:// or https:// URL"),
        ({"LANTERN_EMBED_URL": "http://127.0.0.1:1/v1"}, "set LANTERN_EMBED_REMOTE_MODEL"),
        (
            {"LANTERN_EMBED_URL": "http://h/v1", "LANTERN_EMBED_REMOTE_MODEL": "m",
             "LANTERN_EMBED_TIMEOUT": "soon"},
            "LANTERN_EMBED_TIMEOUT must be a number of seconds",
        ),
        (
            {"LANTERN_EMBED_URL": "http://h/v1", "LANTERN_EMBED_REMOTE_MODEL": "m",
             "LANTERN_EMBED_DIMENSION": "-3"},
            "dimension must be positive",
        ),
    ],
)  # fmt: skip
def test_it_is_used_only_when_configured(
    monkeypatch: pytest.MonkeyPatch, settings: dict[str, str], message: str
) -> None:
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(InvalidInput, match=message):
        resolve_provider("openai-compatible")


def test_a_full_endpoint_url_is_used_as_given(server: Server) -> None:
    server.answer = embeddings_answer()
    provider = OpenAICompatibleProvider(url=server.url + "/embeddings/", model="m")
    provider.embed(["x"])
    assert server.requests[0]["path"] == "/v1/embeddings"

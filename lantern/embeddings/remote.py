"""A provider for servers that speak the OpenAI-compatible `/v1/embeddings` protocol.

Ollama, llama.cpp's `llama-server --embeddings`, vLLM, LM Studio and hosted services answer
`POST {base}/embeddings` with `{"model": ..., "input": [texts]}`. This is the only code in
Lantern that opens a network connection, and only when chosen (`openai-compatible`) and given
a URL:

- LANTERN_EMBED_URL: the base URL (`http://127.0.0.1:11434/v1`) or the full endpoint
  (`.../v1/embeddings`); required.
- LANTERN_EMBED_REMOTE_MODEL: the model's name at the server (`nomic-embed-text`); required.
- LANTERN_EMBED_API_KEY: sent as `Authorization: Bearer ...` when set. It is never printed,
  logged or put into an error message.
- LANTERN_EMBED_TIMEOUT: seconds to wait for each request (default 60).
- LANTERN_EMBED_DIMENSION: the vectors' length, when known. Otherwise the first request
  tells, and reading `dimension` before any `embed` sends one request of one word.

The model id recorded beside the vectors is `remote:` followed by the model's name, so that no
vector from a server is ever compared with one from a local model. The same name on two servers
is taken to mean the same model.

Vectors are scaled to unit length here (servers differ on that), every response is checked
(one finite vector per input, all of one length, the expected one), and every failure, from a
refused connection to a malformed body, is one `EmbeddingFailed` line that names the server.
Redirects are not followed, so the key is never sent to another address. Empty texts are not
sent (several servers refuse them): they get a row of zeros.
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from lantern.embeddings.provider import checked_texts, require_modules
from lantern.errors import EmbeddingFailed, InvalidInput

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

ENV_URL = "LANTERN_EMBED_URL"
ENV_REMOTE_MODEL = "LANTERN_EMBED_REMOTE_MODEL"
ENV_API_KEY = "LANTERN_EMBED_API_KEY"
ENV_TIMEOUT = "LANTERN_EMBED_TIMEOUT"
ENV_DIMENSION = "LANTERN_EMBED_DIMENSION"
MODEL_PREFIX = "remote:"
DEFAULT_TIMEOUT = 60.0
BATCH_SIZE = 64
_PROBE = "dimension"
_MAX_DETAIL = 200


class OpenAICompatibleProvider:
    """Vectors from an OpenAI-compatible embeddings endpoint, configured by URL."""

    name = "openai-compatible"

    def __init__(
        self,
        *,
        url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        dimension: int | None = None,
        batch_size: int = BATCH_SIZE,
    ) -> None:
        """Arguments left out are read from the environment (see the module's docstring)."""
        require_modules(self.name, ["numpy"])
        self.endpoint = _endpoint(url if url is not None else os.environ.get(ENV_URL))
        remote_model = model if model is not None else os.environ.get(ENV_REMOTE_MODEL)
        if remote_model is None or not remote_model.strip():
            raise InvalidInput(
                f"the {self.name} embedding provider needs the model's name at the server: "
                f"set {ENV_REMOTE_MODEL}"
            )
        self.remote_model = remote_model.strip()
        self.model = MODEL_PREFIX + self.remote_model
        key = api_key if api_key is not None else os.environ.get(ENV_API_KEY)
        self._api_key = key.strip() if key and key.strip() else None
        if self._api_key is not None and not (
            self._api_key.isascii() and self._api_key.isprintable()
        ):
            raise InvalidInput(f"{ENV_API_KEY} holds characters that an HTTP header cannot carry")
        self.timeout = timeout if timeout is not None else _env_timeout()
        if not 0 < self.timeout <= 3600:
            raise InvalidInput(
                f"the embedding timeout must be more than 0 and at most 3600 seconds; "
                f"got {self.timeout:g}"
            )
        self._dimension = dimension if dimension is not None else _env_dimension()
        if self._dimension is not None and self._dimension <= 0:
            raise InvalidInput(f"the embedding dimension must be positive; got {self._dimension}")
        if batch_size <= 0:
            raise InvalidInput(f"the batch size must be positive; got {batch_size}")
        self.batch_size = batch_size

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAICompatibleProvider(endpoint={self.endpoint!r}, model={self.model!r})"

    @property
    def dimension(self) -> int:
        """The configured length, else the one the server answered with; asks it if need be."""
        if self._dimension is None:
            self.embed([_PROBE])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        listed = checked_texts(texts)
        sent = [i for i, text in enumerate(listed) if text.strip()]
        rows: dict[int, NDArray[np.float32]] = {}
        for start in range(0, len(sent), self.batch_size):
            batch = sent[start : start + self.batch_size]
            vectors = self._request([listed[i] for i in batch])
            rows.update(zip(batch, vectors, strict=True))
        matrix = np.zeros((len(listed), self.dimension), dtype=np.float32)
        for i, vector in rows.items():
            matrix[i] = vector
        return matrix

    def _request(self, texts: list[str]) -> list[NDArray[np.float32]]:
        """One request: the vectors of `texts`, in order, checked."""
        body = json.dumps({"model": self.remote_model, "input": texts}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.endpoint, data=body, headers=headers, method="POST")
        opener = urllib.request.build_opener(_NoRedirects())
        try:
            with opener.open(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            self._fail(f"answered HTTP {exc.code} {exc.reason}" + (f": {detail}" if detail else ""))
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                self._fail(f"did not answer within {self.timeout:g} s")
            self._fail(f"cannot be reached: {_reason(exc.reason)}")
        except TimeoutError:
            self._fail(f"did not answer within {self.timeout:g} s")
        except OSError as exc:  # a connection reset or closed while the answer was read
            self._fail(f"broke off the connection: {_reason(exc)}")
        except http.client.HTTPException as exc:  # a status line or body that is not HTTP
            self._fail(f"sent a broken HTTP response ({type(exc).__name__})")
        return self._vectors(payload, len(texts))

    def _vectors(self, payload: bytes, count: int) -> list[NDArray[np.float32]]:
        try:
            document = json.loads(payload)
        except (UnicodeDecodeError, json.JSONDecodeError):
            self._fail("sent a response that is not JSON")
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list):
            self._fail('sent JSON without a "data" list')
        if len(data) != count:
            self._fail(f"sent {len(data)} vectors for {count} texts")
        ordered: list[NDArray[np.float32] | None] = [None] * count
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                self._fail(f"sent data item {position} that is not an object")
            index = item.get("index", position)
            if (
                not isinstance(index, int)
                or isinstance(index, bool)
                or not 0 <= index < count
                or ordered[index] is not None
            ):
                self._fail(f"sent data item {position} with a bad index {index!r}")
            ordered[index] = self._vector(item.get("embedding"), position)
        return [vector for vector in ordered if vector is not None]

    def _vector(self, value: Any, position: int) -> NDArray[np.float32]:
        """One vector of the answer, checked and scaled to unit length (in float64, so that
        huge values do not overflow float32 before they are scaled)."""
        import numpy as np

        if not isinstance(value, list) or not value:
            self._fail(f'sent data item {position} without an "embedding" list of numbers')
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
            self._fail(f"sent embedding {position} holding something other than numbers")
        try:
            array = np.array(value, dtype=np.float64)
        except OverflowError:
            array = np.array([np.inf])
        if not np.isfinite(array).all():
            self._fail(f"sent embedding {position} holding a value that is not a finite number")
        if self._dimension is None:
            self._dimension = len(value)
        elif len(value) != self._dimension:
            self._fail(f"sent a {len(value)}-dimension vector; expected {self._dimension}")
        norm = float(np.linalg.norm(array))
        unit: NDArray[np.float32] = (array / norm if norm > 0 else array).astype(np.float32)
        return unit

    def _fail(self, what: str) -> NoReturn:
        message = f"the embedding server at {_shown(self.endpoint)} {what}"
        if self._api_key:
            message = message.replace(self._api_key, "***")
        raise EmbeddingFailed(message)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Turns a redirect into an HTTP error, so that the key goes to the configured server only."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _endpoint(url: str | None) -> str:
    """The URL to POST to: `url` itself if it ends in /embeddings, else `url` + /embeddings
    (a query string, as some gateways want, is kept)."""
    if url is None or not url.strip():
        raise InvalidInput(
            f"the openai-compatible embedding provider needs the server's URL: set {ENV_URL} "
            "(e.g. http://127.0.0.1:11434/v1)"
        )
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"{ENV_URL} must be an http:// or https:// URL; got {_shown(url)!r}")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(
            f"{ENV_URL} must not hold a user name or password; put a key in {ENV_API_KEY}"
        )
    path = parts.path.rstrip("/")
    if not path.endswith("/embeddings"):
        path += "/embeddings"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _shown(url: str) -> str:
    """The URL as messages show it: without a user name, password or query string (which may
    hold a key)."""
    parts = urllib.parse.urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """The server's own error message, when its body gives one, cut short."""
    try:
        raw = exc.read(4096)
    except OSError:
        return ""
    text = raw.decode("utf-8", "replace")
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = None
    if isinstance(document, dict):
        error = document.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


def _reason(reason: object) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__


def _env_timeout() -> float:
    raw = os.environ.get(ENV_TIMEOUT)
    if raw is None or not raw.strip():
        return DEFAULT_TIMEOUT
    try:
        return float(raw)
    except ValueError:
        raise InvalidInput(f"{ENV_TIMEOUT} must be a number of seconds; got {raw!r}") from None


def _env_dimension() -> int | None:
    raw = os.environ.get(ENV_DIMENSION)
    if raw is None or not raw.strip():
        return None
    try:
        return int(raw)
    except ValueError:
        raise InvalidInput(f"{ENV_DIMENSION} must be a whole number; got {raw!r}") from None

"""Calling the endpoint: one chat-completions request, retried with backoff, every failure explained.

Each attempt resolves the host, checks the addresses and connects to one of them itself
(evaluator.generation.transport); the answer is read as server-sent events when streamed
(evaluator.generation.stream) or as one JSON document. A 400 that refuses a parameter the
protocol's request uses is answered by changing the request once and sending it again
(evaluator.generation.adapt). Anything an endpoint says reaches the submitter as one short
line without the key.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from evaluator import __version__
from evaluator.generation.adapt import Adapter, RequestShape, one_line
from evaluator.generation.config import DETAIL_CHARS, EndpointConfig, TaskFailed
from evaluator.generation.stream import StreamBroken, read_stream
from evaluator.generation.transport import Target, Unreachable, open_connection, resolve

# One logger for the whole generator, whichever part speaks.
log = logging.getLogger("evaluator.generation")

RETRY_STATUSES = frozenset({408, 429})  # plus every 5xx
MAX_ANSWER_BYTES = 32 * 1024 * 1024  # a page answer is kilobytes; this bounds a misbehaving endpoint
MAX_ADAPTATIONS = 4  # parameters a refusal can change: length name, temperature, stream options, stream
REASON_CHARS = 500  # a task's whole reason, the endpoint's line included


class _Retryable(Exception):
    """One attempt failed in a way worth trying again."""

    def __init__(self, kind: str, detail: str = "", retry_after: float | None = None, status: int | None = None):
        super().__init__(kind)
        self.kind, self.detail, self.retry_after, self.status = kind, detail, retry_after, status


class _Refused(Exception):
    """An HTTP 400 naming a request parameter: maybe the adapter knows what the endpoint wants instead."""

    def __init__(self, status: int, error: dict, failure: TaskFailed):
        super().__init__(status)
        self.status, self.error, self.failure = status, error, failure


@dataclass
class Answer:
    document: dict
    attempts: int
    request: dict = field(default_factory=dict)  # the shape the answer was asked in (RequestShape.public)


class EndpointClient:
    """Posts chat-completions requests with retries; ``sleep`` is injectable for tests."""

    def __init__(self, config: EndpointConfig, sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.sleep = sleep
        self.target = Target.of(config.url)
        self.adapter = Adapter(RequestShape(length_parameter=config.length_parameter,
                                            temperature=not config.default_temperature, stream=config.stream))

    @property
    def notes(self) -> list[str]:
        """How requests were changed to what the endpoint accepts (for the report)."""
        return list(self.adapter.notes)

    def complete(self, payload: dict, deadline: float | None = None) -> Answer:
        """The endpoint's JSON answer; raises TaskFailed with a clear reason."""
        attempts = self.config.retries + 1
        attempt = adapted = 0
        while True:
            attempt += 1
            shape = self.adapter.current()
            body = json.dumps(shape.apply(payload)).encode("utf-8")
            try:
                return Answer(self._post(body, self._timeout(deadline)), attempt + adapted, shape.public())
            except _Refused as refusal:
                if adapted >= MAX_ADAPTATIONS or not self.adapter.learn(shape, refusal.status, refusal.error):
                    raise refusal.failure from None
                log.info("the endpoint refused a parameter; sending the request again as it accepts")
                adapted, attempt = adapted + 1, attempt - 1  # a changed request is not a retry
            except _Retryable as failure:
                if attempt >= attempts:
                    raise TaskFailed(self._gave_up(failure, attempts)) from None
                wait = self._wait(failure, attempt)
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise TaskFailed(f"{self._gave_up(failure, attempt)}; no time was left to retry") from None
                log.info("attempt %d failed (%s); retrying in %.1f s", attempt, failure.kind, wait)
                self.sleep(wait)

    def _timeout(self, deadline: float | None) -> float:
        if deadline is None:
            return self.config.timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise TaskFailed("not generated: the overall time limit was reached")
        return min(self.config.timeout, left)

    def _wait(self, failure: _Retryable, attempt: int) -> float:
        wait = self.config.backoff * 2 ** (attempt - 1)
        if failure.retry_after is not None:
            wait = failure.retry_after
        return max(0.0, min(wait, self.config.max_wait))

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "User-Agent": f"iwr-bench-evaluator/{__version__}"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        return headers

    def _post(self, body: bytes, timeout: float) -> dict:
        started = time.monotonic()
        try:
            addresses = resolve(self.target, self.config.public_only)
            connection = open_connection(self.target, addresses, timeout)
        except Unreachable as exc:
            raise _Retryable("connection", str(exc)) from None
        try:
            connection.request("POST", self.target.path, body=body, headers=self._headers())
            response = connection.getresponse()
            if response.status >= 300:
                raise self._http_failure(response)
            if "text/event-stream" in (response.getheader("Content-Type") or ""):
                return read_stream(response, started + timeout, MAX_ANSWER_BYTES)
            return _parse_json(_read_limited(response, started + timeout))
        except StreamBroken as exc:
            raise _Retryable("stream", self.scrub(str(exc))) from None
        except TimeoutError:
            raise _Retryable("timeout", f"{timeout:g}") from None
        except (ConnectionError, OSError, http.client.HTTPException) as error:  # reset, dropped or garbled
            raise _Retryable("connection", type(error).__name__) from None
        finally:
            connection.close()

    def _http_failure(self, response: http.client.HTTPResponse) -> Exception:
        status = response.status
        error = _error_of(response)
        detail = one_line(str(error.get("message") or ""), self.config.api_key, DETAIL_CHARS)
        if status in RETRY_STATUSES or status >= 500:
            kind = "rate_limited" if status == 429 else "server_error"
            return _Retryable(kind, detail, parse_retry_after(response.getheader("Retry-After")), status)
        failure = TaskFailed(self.scrub(_refusal_reason(status, detail, self.config.url, response)))
        return _Refused(status, error, failure) if status == 400 else failure

    def _gave_up(self, failure: _Retryable, attempts: int) -> str:
        tries = f"{attempts} attempt{'s' * (attempts != 1)}"
        if failure.kind == "rate_limited":
            return (f"the endpoint was still rate limiting (HTTP 429) after {tries}; "
                    "raise your rate limit or retry later")
        if failure.kind == "server_error":
            return self.scrub(f"the endpoint failed with HTTP {failure.status} on all {tries}: {failure.detail}")
        if failure.kind == "timeout":
            return f"the endpoint gave no complete answer within the {failure.detail} s request timeout ({tries})"
        if failure.kind == "stream":
            return self.scrub(f"{failure.detail} ({tries})")
        return self.scrub(f"could not reach the endpoint ({failure.detail}) in {tries}")

    def scrub(self, text: str) -> str:
        """``text`` as one bounded line without the API key (endpoints sometimes echo what they were sent)."""
        return one_line(text, self.config.api_key, REASON_CHARS)


def _read_limited(response, deadline: float) -> bytes:
    """The whole body, refusing huge answers and answers trickling past the request timeout."""
    chunks, size = [], 0
    while True:
        chunk = response.read(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise TaskFailed(f"the endpoint's answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MB")
        if time.monotonic() > deadline:
            raise TimeoutError
        chunks.append(chunk)


def _parse_json(raw: bytes) -> dict:
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        start = raw[:80].decode("utf-8", "replace")
        raise TaskFailed(f"the endpoint's answer is not valid JSON (it starts {start!r})") from None
    if not isinstance(document, dict):
        raise TaskFailed("the endpoint's answer is JSON but not an object")
    return document


def _error_of(response: http.client.HTTPResponse) -> dict:
    """The endpoint's error (OpenAI style ``{"error": {"message", "param", "code"}}``, or its text as message)."""
    try:
        raw = response.read(64 * 1024).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return {}
    try:
        error = json.loads(raw)["error"]
    except (ValueError, KeyError, TypeError):
        return {"message": raw}
    if isinstance(error, dict):
        return {name: error.get(name) for name in ("message", "param", "code", "type")}
    return {"message": str(error)}


def _refusal_reason(status: int, detail: str, url: str, response) -> str:
    said = f": {detail}" if detail else ""
    if status == 401:
        return f"the endpoint refused the API key (HTTP 401){said}"
    if status == 403:
        return f"the endpoint denied access with this API key (HTTP 403){said}"
    if status == 404:
        return f"no chat-completions endpoint at {url} (HTTP 404); check the base URL (it often ends in /v1){said}"
    if status == 413:
        return f"the request was too large for the endpoint (HTTP 413); lower the image limit{said}"
    if 300 <= status < 400:
        target = response.getheader("Location") or "another address"
        return f"the endpoint redirected to {target} (HTTP {status}); give that address as the base URL"
    return f"the endpoint rejected the request (HTTP {status}){said}"


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())

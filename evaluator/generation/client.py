"""Calling the endpoint: one chat-completions request, retried with backoff, every failure explained."""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from evaluator import __version__
from evaluator.generation.config import DETAIL_CHARS, EndpointConfig, TaskFailed

# One logger for the whole generator, whichever part speaks.
log = logging.getLogger("evaluator.generation")

RETRY_STATUSES = frozenset({408, 429})  # plus every 5xx
MAX_ANSWER_BYTES = 32 * 1024 * 1024  # a page answer is kilobytes; this bounds a misbehaving endpoint


class _Retryable(Exception):
    """One attempt failed in a way worth trying again."""

    def __init__(self, kind: str, detail: str = "", retry_after: float | None = None, status: int | None = None):
        super().__init__(kind)
        self.kind, self.detail, self.retry_after, self.status = kind, detail, retry_after, status


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect would carry the Authorization header elsewhere: treat it as an answer instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


@dataclass
class Answer:
    document: dict
    attempts: int


class EndpointClient:
    """Posts chat-completions requests with retries; ``sleep`` is injectable for tests."""

    def __init__(self, config: EndpointConfig, sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.sleep = sleep
        self.opener = urllib.request.build_opener(_NoRedirects)

    def complete(self, payload: dict, deadline: float | None = None) -> Answer:
        """The endpoint's JSON answer; raises TaskFailed with a clear reason."""
        body = json.dumps(payload).encode("utf-8")
        attempts = self.config.retries + 1
        for attempt in range(1, attempts + 1):
            timeout = self._timeout(deadline)
            try:
                return Answer(self._post(body, timeout), attempt)
            except _Retryable as failure:
                if attempt == attempts:
                    raise TaskFailed(self._gave_up(failure, attempts)) from None
                wait = self._wait(failure, attempt)
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise TaskFailed(f"{self._gave_up(failure, attempt)}; no time was left to retry") from None
                log.info("attempt %d failed (%s); retrying in %.1f s", attempt, failure.kind, wait)
                self.sleep(wait)
        raise AssertionError("unreachable")

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

    def _post(self, body: bytes, timeout: float) -> dict:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": f"iwr-bench-evaluator/{__version__}"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        # The scheme is checked to be http or https by EndpointConfig.
        request = urllib.request.Request(self.config.url, data=body, headers=headers, method="POST")  # noqa: S310
        started = time.monotonic()
        try:
            with self.opener.open(request, timeout=timeout) as response:
                raw = _read_limited(response, started + timeout)
        except urllib.error.HTTPError as error:
            raise self._http_failure(error) from None
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError):
                raise _Retryable("timeout", f"{timeout:g}") from None
            raise _Retryable("connection", str(error.reason)) from None
        except TimeoutError:
            raise _Retryable("timeout", f"{timeout:g}") from None
        except (ConnectionError, OSError, http.client.HTTPException) as error:  # reset, dropped or garbled
            raise _Retryable("connection", type(error).__name__) from None
        return _parse_json(raw)

    def _http_failure(self, error: urllib.error.HTTPError) -> Exception:
        status = error.code
        detail = self.scrub(_error_detail(error))
        if status in RETRY_STATUSES or status >= 500:
            kind = "rate_limited" if status == 429 else "server_error"
            return _Retryable(kind, detail, parse_retry_after(error.headers.get("Retry-After")), status)
        return TaskFailed(self.scrub(_refusal_reason(status, detail, self.config.url, error.headers)))

    def _gave_up(self, failure: _Retryable, attempts: int) -> str:
        tries = f"{attempts} attempt{'s' * (attempts != 1)}"
        if failure.kind == "rate_limited":
            return (f"the endpoint was still rate limiting (HTTP 429) after {tries}; "
                    "raise your rate limit or retry later")
        if failure.kind == "server_error":
            return self.scrub(f"the endpoint failed with HTTP {failure.status} on all {tries}: {failure.detail}")
        if failure.kind == "timeout":
            return f"the endpoint gave no complete answer within the {failure.detail} s request timeout ({tries})"
        return self.scrub(f"could not reach the endpoint ({failure.detail}) in {tries}")

    def scrub(self, text: str) -> str:
        """``text`` without the API key (endpoints sometimes echo what they were sent)."""
        key = self.config.api_key
        return text.replace(key, "[api key]") if key else text


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


def _error_detail(error: urllib.error.HTTPError) -> str:
    """The endpoint's own error message (OpenAI style ``{"error": {"message": ...}}`` or text)."""
    try:
        raw = error.read(64 * 1024).decode("utf-8", "replace")
    except OSError:
        return ""
    try:
        message = json.loads(raw)["error"]
        message = message.get("message", message) if isinstance(message, dict) else message
    except (ValueError, KeyError, TypeError):
        message = raw
    return " ".join(str(message).split())[:DETAIL_CHARS]


def _refusal_reason(status: int, detail: str, url: str, headers) -> str:
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
        target = headers.get("Location", "another address")
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

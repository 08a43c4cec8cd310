"""The judge relay: the only process of an official job that holds the judge's key.

It runs beside the job, outside the sandbox, and listens on a Unix socket that is bound into
the sandbox (the job has no network namespace access, so the socket is its only way out).
The job sends one JSON line per call (purpose, model, messages, answer length); the relay

- answers from its cache when the same request (model, messages with their images, length) was
  answered before, so scoring the same bundle again costs nothing and gives the same verdicts;
- refuses, with the reason, once the job's budget (requests or tokens) is spent;
- otherwise asks the endpoint (evaluator.generation.client: retries with back-off on 429, 408 and
  5xx, every failure one line without the key) and keeps the answer.

Counters (requests, cache hits, tokens, retries) go into results.json's ``judge`` record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socketserver
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.generation.config import EndpointConfig, TaskFailed

log = logging.getLogger("evaluator.official.relay")

MAX_LINE = 64 * 1024 * 1024  # a request carries at most a few screenshots as data URLs
SOCKET_NAME = "judge.sock"


@dataclass(frozen=True)
class Budget:
    """What one job may spend at the endpoint (cache hits are free)."""

    requests: int = 5000
    tokens: int = 20_000_000


@dataclass
class RelayStats:
    requests: int = 0  # sent to the endpoint and answered
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0
    failures: int = 0
    refused_budget: int = 0
    by_purpose: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"requests": self.requests, "cache_hits": self.cache_hits, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "retries": self.retries, "failures": self.failures,
                "refused_budget": self.refused_budget, "by_purpose": dict(self.by_purpose)}


def request_key(model: str, messages: list, max_tokens: int) -> str:
    """The cache key: a hash of everything that decides the answer (images are inside the messages)."""
    text = json.dumps({"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class AnswerCache:
    """Answers by request key, in a folder (kept between runs) or in memory."""

    def __init__(self, directory: Path | None = None):
        self.directory = Path(directory) if directory else None
        self._memory: dict[str, dict] = {}
        if self.directory:
            self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        if key in self._memory or self.directory is None:
            return self._memory.get(key)
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, answer: dict) -> None:
        self._memory[key] = answer
        if self.directory is None:
            return
        path = self._path(key)
        path.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(answer, fh)
        os.replace(tmp, path)


class Relay:
    """Cache, budget and endpoint calls; :meth:`serve` puts it on a Unix socket."""

    def __init__(self, endpoint: EndpointConfig, cache: AnswerCache | None = None, budget: Budget = Budget(),
                 client=None):
        from evaluator.generation.client import EndpointClient

        self.endpoint = endpoint
        self.cache = cache or AnswerCache()
        self.budget = budget
        self.client = client or EndpointClient(endpoint)
        self.stats = RelayStats()
        self._lock = threading.Lock()
        self._server: socketserver.UnixStreamServer | None = None
        self._thread: threading.Thread | None = None
        self._folder: Path | None = None
        self.socket_path: Path | None = None

    # ------------------------------------------------------------------ one call

    def answer(self, request: dict) -> dict:
        """The reply to one job request: ``{"ok": True, "content", "cached", "usage"}`` or ``{"ok": False, ...}``."""
        try:
            model, messages, max_tokens, purpose = _fields(request)
        except ValueError as exc:
            return {"ok": False, "kind": "request", "error": str(exc)}
        key = request_key(model, messages, max_tokens)
        cached = self.cache.get(key)
        with self._lock:
            self._count(purpose, "cache_hits" if cached else "asked")
            if cached:
                self.stats.cache_hits += 1
                return {"ok": True, "content": cached["content"], "cached": True, "usage": cached.get("usage", {})}
            refusal = self._over_budget()
            if refusal:
                self.stats.refused_budget += 1
                return {"ok": False, "kind": "budget", "error": refusal}
        return self._ask(key, model, messages, max_tokens)

    def _ask(self, key: str, model: str, messages: list, max_tokens: int) -> dict:
        payload = {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0}
        try:
            reply = self.client.complete(payload)
        except TaskFailed as exc:
            with self._lock:
                self.stats.failures += 1
                self.stats.retries += self.endpoint.retries
            return {"ok": False, "kind": "endpoint", "error": f"judge endpoint: {exc}"}
        content, usage = _content(reply.document), _usage(reply.document)
        with self._lock:
            self.stats.requests += 1
            self.stats.retries += max(0, reply.attempts - 1)
            self.stats.input_tokens += usage["input_tokens"]
            self.stats.output_tokens += usage["output_tokens"]
        answer = {"content": content, "usage": usage, "model": model}
        self.cache.put(key, answer)
        return {"ok": True, "content": content, "cached": False, "usage": usage}

    def _over_budget(self) -> str | None:
        spent = self.stats.input_tokens + self.stats.output_tokens
        if self.stats.requests >= self.budget.requests:
            return f"the job's judge budget of {self.budget.requests} requests is spent"
        if spent >= self.budget.tokens:
            return f"the job's judge budget of {self.budget.tokens} tokens is spent ({spent} used)"
        return None

    def _count(self, purpose: str, what: str) -> None:
        counts = self.stats.by_purpose.setdefault(purpose, {"asked": 0, "cache_hits": 0})
        counts[what] += 1

    # ------------------------------------------------------------------ the socket

    def serve(self, folder: Path | None = None) -> Path:
        """Listen on ``folder``/judge.sock (a new private folder by default); returns the socket's path."""
        if folder is None:
            folder = self._folder = Path(tempfile.mkdtemp(prefix="iwr-judge-"))
        folder.mkdir(parents=True, exist_ok=True)
        self.socket_path = folder / SOCKET_NAME
        relay = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                line = self.rfile.readline(MAX_LINE)
                try:
                    request = json.loads(line)
                except ValueError:
                    reply = {"ok": False, "kind": "request", "error": "the relay reads one JSON object per line"}
                else:
                    reply = relay.answer(request if isinstance(request, dict) else {})
                with contextlib.suppress(OSError):
                    self.wfile.write(json.dumps(reply).encode("utf-8") + b"\n")

        self._server = socketserver.ThreadingUnixStreamServer(str(self.socket_path), Handler)
        self._server.daemon_threads = True
        # The folder stays private (mkdtemp: 0700): the evaluator connects as this user, while the
        # page's Chromium runs as an unprivileged one and cannot reach the relay at all.
        self._thread = threading.Thread(target=self._server.serve_forever, name="iwr-judge-relay", daemon=True)
        self._thread.start()
        return self.socket_path

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self.socket_path is not None:
            with contextlib.suppress(OSError):
                self.socket_path.unlink()
        if self._folder is not None:
            with contextlib.suppress(OSError):
                self._folder.rmdir()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _fields(request: dict) -> tuple[str, list, int, str]:
    model, messages = request.get("model"), request.get("messages")
    max_tokens, purpose = request.get("max_tokens", 512), str(request.get("purpose") or "other")
    if not isinstance(model, str) or not model:
        raise ValueError("the request names no model")
    if not isinstance(messages, list) or not messages:
        raise ValueError("the request has no messages")
    if not isinstance(max_tokens, int) or not 1 <= max_tokens <= 8192:
        raise ValueError("max_tokens must be 1-8192")
    return model, messages, max_tokens, purpose[:40]


def _content(document: dict) -> str:
    try:
        content = document["choices"][0]["message"].get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        return ""
    if isinstance(content, list):  # some endpoints answer in parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _usage(document: dict) -> dict:
    usage = document.get("usage") if isinstance(document.get("usage"), dict) else {}
    return {"input_tokens": int(usage.get("prompt_tokens") or 0),
            "output_tokens": int(usage.get("completion_tokens") or 0)}

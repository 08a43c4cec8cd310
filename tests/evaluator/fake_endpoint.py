"""A fake OpenAI-compatible chat-completions server for tests, run in a thread on 127.0.0.1.

Each request is recorded (path, headers, decoded JSON body and the images it carries,
decoded) and answered with the next scripted :class:`Reply`; once the script is used up,
every request gets a good answer holding a small page. Use it as a context manager::

    with FakeEndpoint([Reply(429, headers={"Retry-After": "3"})]) as endpoint:
        ... EndpointConfig(base_url=endpoint.base_url, ...)

Modes: ``reasoning=True`` behaves like a current reasoning model's endpoint: HTTP 400 for
``max_tokens`` (use ``max_completion_tokens``) and for any temperature but the default 1, as
OpenAI words them, and usage with reasoning tokens. ``sse=True`` answers a request asking for
``stream`` as server-sent events, one piece of the answer every ``event_gap`` seconds.
``gateway_idle`` plays a gateway in front that drops a connection silent for that long.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = ('<!DOCTYPE html><html><body><h1>Shopping list</h1>'
        '<img src="__PLACEHOLDER_ASSETS_BASE_DIR__/asset001.png" width="8" height="8" alt="logo">'
        '<iframe src="https://tracker.example/"></iframe>'
        '<button class="btn">Add</button></body></html>')
ANSWER = f"Here is the page.\n\n```html\n{PAGE}\n```\n\nIt mocks the backend in JavaScript."


@dataclass
class Reply:
    """One scripted answer: a status, a body (dict -> JSON, str/bytes as is), headers, a delay;
    ``raw`` bytes are written as the whole response instead (to break the HTTP protocol)."""

    status: int = 200
    body: dict | str | bytes | None = None
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None
    events: list | None = None  # server-sent events: dicts (as JSON) or str (sent as they are)


REASONING_USAGE = {"prompt_tokens": 1200, "completion_tokens": 2300, "total_tokens": 3500,
                   "completion_tokens_details": {"reasoning_tokens": 2000}}
MAX_TOKENS_REFUSAL = {"error": {
    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
               "Use 'max_completion_tokens' instead.",
    "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}
TEMPERATURE_REFUSAL = {"error": {
    "message": "Unsupported value: 'temperature' does not support 0 with this model. "
               "Only the default (1) value is supported.",
    "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}


def stream_events(content: str = ANSWER, pieces: int = 5, usage: dict | None = None) -> list:
    """The events of a streamed answer: role, ``pieces`` bits of content, finish, usage, [DONE]."""
    size = -(-len(content) // pieces)
    chunk = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "fake"}
    events = [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    events += [{**chunk, "choices": [{"index": 0, "delta": {"content": content[at:at + size]}}]}
               for at in range(0, len(content), size)]
    events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if usage:
        events.append({**chunk, "choices": [], "usage": usage})
    return [*events, "[DONE]"]


def completion(content: str | None = ANSWER, finish_reason: str = "stop", usage: dict | None = None) -> dict:
    """A chat-completions answer document holding ``content``."""
    return {"id": "chatcmpl-test", "object": "chat.completion", "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": finish_reason}],
            "usage": usage or {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500}}


@dataclass
class Recorded:
    path: str
    headers: dict
    body: dict

    @property
    def images(self) -> list[tuple[str, bytes]]:
        """(mime type, bytes) of every image in the request, in message order."""
        found = []
        for message in self.body.get("messages", []):
            content = message.get("content")
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "image_url":
                    head, data = part["image_url"]["url"].split(",", 1)
                    found.append((head[len("data:"):].split(";")[0], base64.b64decode(data)))
        return found

    @property
    def text(self) -> str:
        parts = []
        for message in self.body.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "text":
                    parts.append(part["text"])
        return "\n".join(parts)


def mean_red(jpeg: bytes) -> float:
    from PIL import Image, ImageStat

    return ImageStat.Stat(Image.open(io.BytesIO(jpeg)).convert("RGB")).mean[0]


class FakeEndpoint:
    """The server; ``requests`` lists what it received, ``base_url`` is where it listens (…/v1)."""

    def __init__(self, script: list[Reply] | None = None, *, reasoning: bool = False, sse: bool = False,
                 event_gap: float = 0.0, gateway_idle: float | None = None, host: str = "127.0.0.1",
                 tls=None):
        self.script = list(script or [])
        self.reasoning, self.sse, self.event_gap, self.gateway_idle = reasoning, sse, event_gap, gateway_idle
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, 0), self._handler_class())
        self._server.daemon_threads = True
        self.tls = tls  # an ssl.SSLContext (server side): the endpoint speaks https
        self.server_names: list[str | None] = []  # the TLS server name (SNI) each connection asked for
        if tls is not None:
            tls.sni_callback = lambda sock, name, context: self.server_names.append(name)
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1"

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def __enter__(self) -> FakeEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_reply(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if self.script:
                return self.script.pop(0)
        body = recorded.body
        if self.reasoning and "max_tokens" in body:
            return Reply(400, MAX_TOKENS_REFUSAL)
        if self.reasoning and body.get("temperature", 1) != 1:
            return Reply(400, TEMPERATURE_REFUSAL)
        usage = REASONING_USAGE if self.reasoning else None
        if self.sse and body.get("stream"):
            with_usage = (body.get("stream_options") or {}).get("include_usage")
            return Reply(events=stream_events(usage=(usage or completion()["usage"]) if with_usage else None))
        return Reply(body=completion(usage=usage))

    def _handler_class(self):
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                reply = endpoint._next_reply(Recorded(self.path, dict(self.headers), body))
                idle = endpoint.gateway_idle
                if idle is not None and reply.delay >= idle:
                    time.sleep(idle)  # the gateway gives up on a silent connection before the answer comes
                    self.close_connection = True
                    return
                time.sleep(reply.delay)
                if reply.events is not None:
                    self._send_events(reply)
                    return
                payload = reply.body if reply.body is not None else {}
                data = json.dumps(payload).encode() if isinstance(payload, dict) else (
                    payload.encode() if isinstance(payload, str) else payload)
                try:
                    if reply.raw is not None:
                        self.wfile.write(reply.raw)
                        self.close_connection = True
                        return
                    self.send_response(reply.status)
                    for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout tests)

            def _send_events(self, reply: Reply) -> None:
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.end_headers()
                    for event in reply.events:
                        data = event if isinstance(event, str) else json.dumps(event)
                        self.wfile.write(f"data: {data}\n\n".encode() if not data.startswith(":") else
                                         f"{data}\n\n".encode())
                        self.wfile.flush()
                        time.sleep(endpoint.event_gap)
                except OSError:
                    pass
                self.close_connection = True  # HTTP/1.0: the end of the stream is the end of the connection

            def log_message(self, *args):
                pass

        return Handler

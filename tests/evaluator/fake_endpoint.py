"""A fake OpenAI-compatible chat-completions server for tests, run in a thread on 127.0.0.1.

Each request is recorded (path, headers, decoded JSON body and the images it carries,
decoded) and answered with the next scripted :class:`Reply`; once the script is used up,
every request gets a good answer holding a small page. Use it as a context manager::

    with FakeEndpoint([Reply(429, headers={"Retry-After": "3"})]) as endpoint:
        ... EndpointConfig(base_url=endpoint.base_url, ...)
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

    def __init__(self, script: list[Reply] | None = None):
        self.script = list(script or [])
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_reply(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            return self.script.pop(0) if self.script else Reply(body=completion())

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
                time.sleep(reply.delay)
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

            def log_message(self, *args):
                pass

        return Handler

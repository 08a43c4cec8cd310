"""The job's side of the judge relay: one JSON line out, one back, over the Unix socket it was given.

The job has no key and no network; everything it learns from the judge comes through here.
A refusal (budget spent, endpoint failing after its retries) raises :class:`JudgeUnavailable`,
which makes the task's evaluation incomplete: never a silent 0 or pass.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

CALL_TIMEOUT_S = 900.0  # the relay's own retries and back-off happen within one call


class JudgeUnavailable(RuntimeError):
    """The judge gave no answer (budget, endpoint, relay); the message is one line."""


class RelayClient:
    def __init__(self, socket_path: str | Path, timeout: float = CALL_TIMEOUT_S):
        self.socket_path = str(socket_path)
        self.timeout = timeout

    def chat(self, purpose: str, model: str, messages: list, max_tokens: int = 512) -> tuple[str, bool]:
        """The judge's answer text and whether it came from the cache."""
        request = {"purpose": purpose, "model": model, "messages": messages, "max_tokens": max_tokens}
        reply = self._exchange(json.dumps(request).encode("utf-8") + b"\n")
        if not reply.get("ok"):
            raise JudgeUnavailable(str(reply.get("error") or "the judge relay refused the request"))
        return str(reply.get("content") or ""), bool(reply.get("cached"))

    def _exchange(self, line: bytes) -> dict:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(self.timeout)
                sock.connect(self.socket_path)
                sock.sendall(line)
                data = sock.makefile("rb").readline()
        except OSError as exc:
            raise JudgeUnavailable(f"the judge relay at {self.socket_path} did not answer: {exc}") from None
        try:
            reply = json.loads(data)
        except ValueError:
            raise JudgeUnavailable("the judge relay sent no answer") from None
        return reply if isinstance(reply, dict) else {}

"""Reading a streamed chat-completions answer (server-sent events) into one answer document.

Long answers are streamed (``"stream": true``) so that bytes keep flowing: gateways and proxies
drop connections that stay idle for minutes while a model writes a large page. The events are
``data: {chunk}`` lines ended by a blank line, the last one ``data: [DONE]``; each chunk carries a
piece of the message in ``choices[0].delta.content``, the finish reason at the end, and (when
asked with ``stream_options.include_usage``) the token usage in a last chunk of its own.
"""

from __future__ import annotations

import json
import time

from evaluator.generation.config import TaskFailed

MAX_LINE_BYTES = 4 * 1024 * 1024


class StreamBroken(Exception):
    """The stream ended early or the endpoint reported an error inside it (worth retrying)."""


def read_stream(response, deadline: float, max_bytes: int) -> dict:
    """The answer document assembled from the events of ``response``."""
    parts: list[str] = []
    state = {"finish": None, "usage": None, "model": None, "done": False}
    data_lines: list[bytes] = []
    size = 0
    while not state["done"]:
        line = response.readline(MAX_LINE_BYTES)
        size += len(line)
        if size > max_bytes:
            raise TaskFailed(f"the endpoint's answer is larger than {max_bytes // (1024 * 1024)} MB")
        if time.monotonic() > deadline:
            raise TimeoutError
        if not line:
            break
        line = line.rstrip(b"\r\n")
        if line:
            if line.startswith(b"data:"):
                data_lines.append(line[5:].removeprefix(b" "))
            continue  # comments (keep-alives), event names and ids carry nothing we need
        if data_lines:
            _take(b"\n".join(data_lines), parts, state)
            data_lines = []
    if data_lines:
        _take(b"\n".join(data_lines), parts, state)
    if not state["done"] and state["finish"] is None:
        raise StreamBroken("the answer stream ended before the answer was complete")
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(parts)},
                         "finish_reason": state["finish"]}],
            "usage": state["usage"], "model": state["model"], "streamed": True}


def _take(data: bytes, parts: list[str], state: dict) -> None:
    if data.strip() == b"[DONE]":
        state["done"] = True
        return
    try:
        chunk = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        start = data[:60].decode("utf-8", "replace")
        raise TaskFailed(f"the endpoint's answer stream holds an event that is not JSON (it starts {start!r})") \
            from None
    if not isinstance(chunk, dict):
        return
    if chunk.get("error"):
        error = chunk["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        raise StreamBroken(f"the endpoint reported an error in the answer stream: {message}")
    state["model"] = chunk.get("model") or state["model"]
    if isinstance(chunk.get("usage"), dict):
        state["usage"] = chunk["usage"]
    for choice in chunk.get("choices") or []:
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or {}
        content = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(content, str):
            parts.append(content)
        if choice.get("finish_reason"):
            state["finish"] = choice["finish_reason"]

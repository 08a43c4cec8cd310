"""What the endpoint accepts, learned from its refusals; and endpoint text made safe to show.

The protocol asks for temperature 0 and an answer-length limit. Current reasoning models
refuse both as sent: ``max_tokens`` must be ``max_completion_tokens``, and any temperature
but their default is an error. Such a refusal is an HTTP 400 whose body names the parameter;
each one is recognised, the request is changed once to what the endpoint accepts, and sent
again. The change is kept for every later request and written to the generation report, so
a page made at the model's default temperature says so.
"""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass

# Words endpoints use when a parameter is refused outright (not merely given a bad value: a
# "max_tokens is too large" must not switch the parameter's name).
_REFUSED = ("unsupported", "not supported", "does not support", "unrecognized", "unknown parameter",
            "not permitted", "extra_forbidden", "not allowed")
# ...and when only one value of it is accepted (we send 0, which any range includes).
_ONLY_DEFAULT = ("only the default", "only supports", "must be", "only 1", "invalid")


@dataclass
class RequestShape:
    """How requests are sent now. temperature False: none is sent (the model's default applies)."""

    length_parameter: str = "max_tokens"
    temperature: bool = True
    stream: bool = True
    stream_options: bool = True

    def apply(self, payload: dict) -> dict:
        """The protocol's request (temperature 0, max_tokens) in the shape the endpoint accepts."""
        body = dict(payload)
        limit = body.pop("max_tokens", None)
        if limit is not None:
            body[self.length_parameter] = limit
        if not self.temperature:
            body.pop("temperature", None)
        if self.stream:
            body["stream"] = True
            if self.stream_options:
                body["stream_options"] = {"include_usage": True}
        return body

    def public(self) -> dict:
        shown = asdict(self)
        shown["temperature"] = 0 if self.temperature else "default"
        return shown


class Adapter:
    """One shape shared by every request of a run (threads included); each change is made once."""

    def __init__(self, shape: RequestShape):
        self.shape = shape
        self.notes: list[str] = []
        self._lock = threading.Lock()

    def current(self) -> RequestShape:
        with self._lock:
            return RequestShape(**asdict(self.shape))

    def learn(self, sent: RequestShape, status: int, error: dict) -> bool:
        """Change the shape for a 400 refusing one parameter ``sent`` used; False when it names none."""
        if status != 400:
            return False
        text = " ".join(str(error.get(name) or "") for name in ("message", "param", "code")).lower()
        with self._lock:
            for fix in (_token_fix, _temperature_fix, _stream_options_fix, _stream_fix):
                note = fix(sent, self.shape, text)
                if note:
                    if note not in self.notes:
                        self.notes.append(note)
                    return True
        return False


def _refuses(text: str, parameter: str, words: tuple[str, ...] = _REFUSED) -> bool:
    return re.search(rf"(?<![a-z_]){parameter}(?![a-z_])", text) is not None and any(w in text for w in words)


def _token_fix(sent: RequestShape, shape: RequestShape, text: str) -> str | None:
    if sent.length_parameter == "max_tokens" and _refuses(text, "max_tokens", (*_REFUSED, "max_completion_tokens")):
        shape.length_parameter = "max_completion_tokens"
        return "the endpoint refuses max_tokens: the answer-length limit was sent as max_completion_tokens"
    if sent.length_parameter == "max_completion_tokens" and _refuses(text, "max_completion_tokens"):
        shape.length_parameter = "max_tokens"
        return "the endpoint refuses max_completion_tokens: the answer-length limit was sent as max_tokens"
    return None


def _temperature_fix(sent: RequestShape, shape: RequestShape, text: str) -> str | None:
    if sent.temperature and _refuses(text, "temperature", _REFUSED + _ONLY_DEFAULT):
        shape.temperature = False
        return DEFAULT_TEMPERATURE_NOTE
    return None


def _stream_options_fix(sent: RequestShape, shape: RequestShape, text: str) -> str | None:
    if sent.stream and sent.stream_options and "stream_options" in text:
        shape.stream_options = False
        return "the endpoint refuses stream_options: token usage may be missing from the report"
    return None


def _stream_fix(sent: RequestShape, shape: RequestShape, text: str) -> str | None:
    if sent.stream and (_refuses(text, "stream") or _refuses(text, "streaming")):
        shape.stream, shape.stream_options = False, False
        return "the endpoint refuses streamed answers: each answer was read whole"
    return None


DEFAULT_TEMPERATURE_NOTE = ("the endpoint refuses any temperature but its default: the model ran at its default "
                            "temperature (the protocol asks for 0)")

_KEYLIKE = re.compile(r"\b(?:sk|rk|pk|key|api)[-_][A-Za-z0-9_\-]{8,}|\b[A-Za-z0-9]{32,}\b")
_BEARER = re.compile(r"(?i)\b(bearer|token|authorization)\s*[:=]?\s+\S+")


def one_line(text: str, api_key: str = "", limit: int = 200) -> str:
    """``text`` as one short line that is safe to show: the key and anything key-like removed,
    control characters and line breaks gone, at most ``limit`` characters."""
    if api_key:
        text = text.replace(api_key, "[api key]")
    text = _BEARER.sub(lambda match: f"{match[1]} [redacted]", text)
    text = _KEYLIKE.sub("[redacted]", text)
    text = " ".join("".join(char if char.isprintable() else " " for char in text).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "\u2026"

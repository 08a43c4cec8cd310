"""Endpoint settings and their checks, the protocol's limits, and the generator's two errors."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

PROTOCOL_MAX_IMAGES = 70
PROTOCOL_MAX_FRAMES = 64
FRAME_RATE = 1  # frames per second sampled from the recording
TEMPERATURE = 0
DETAIL_CHARS = 200  # an endpoint's own error text, as one line, at most this long
LENGTH_PARAMETERS = ("max_tokens", "max_completion_tokens")
# Development only: lets an API key go over plain http to this machine (a local model server).
PLAIN_HTTP_ENV = "IWR_GENERATION_ALLOW_PLAIN_HTTP"


class ConfigError(ValueError):
    """The endpoint settings cannot be used; the message is one line."""


class TaskFailed(Exception):
    """This task gets no page; the message is the reason shown to the submitter."""


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to ask the model. ``api_key`` never appears in repr, logs or files.

    retries: extra attempts after the first one for retryable failures.
    backoff: first wait between attempts in seconds, doubled each time, capped by max_wait
        (which also caps a Retry-After the endpoint asks for).
    length_parameter: how the answer-length limit is sent first (max_tokens, or
        max_completion_tokens for reasoning models); a refusal of one switches to the other.
    default_temperature: send no temperature, so the model runs at its default (the protocol
        asks for 0; reasoning models refuse it). Also chosen on its own when the endpoint refuses 0.
    stream: ask for server-sent events, so long answers keep the connection busy.
    public_only: refuse, at each request, a host that resolves to any non-public address
        (the platform calls strangers' endpoints: no loopback, private or link-local targets).
    allow_plain_http: let an API key go over plain http, to this machine only (development);
        defaults to the IWR_GENERATION_ALLOW_PLAIN_HTTP environment variable being 1.
    """

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    max_tokens: int = 16000
    max_images: int = PROTOCOL_MAX_IMAGES
    max_frames: int = PROTOCOL_MAX_FRAMES
    timeout: float = 600.0
    retries: int = 3
    backoff: float = 2.0
    max_wait: float = 60.0
    length_parameter: str = "max_tokens"
    default_temperature: bool = False
    stream: bool = True
    public_only: bool = False
    allow_plain_http: bool = field(default_factory=lambda: os.environ.get(PLAIN_HTTP_ENV) == "1")

    def __post_init__(self) -> None:
        problems = config_problems(self)
        if problems:
            raise ConfigError("; ".join(problems))

    @property
    def url(self) -> str:
        """The chat-completions URL: base URL + /chat/completions (unless already given in full)."""
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"

    def public_settings(self) -> dict:
        """Everything but the key, for reports."""
        return {"base_url": self.base_url, "model": self.model, "max_tokens": self.max_tokens,
                "max_images": self.max_images, "max_frames": self.max_frames,
                "temperature": "default" if self.default_temperature else TEMPERATURE,
                "frame_rate": FRAME_RATE, "timeout": self.timeout, "retries": self.retries,
                "length_parameter": self.length_parameter, "stream": self.stream}


def config_problems(config: EndpointConfig) -> list[str]:
    """Every reason the settings cannot be used (empty list = usable)."""
    problems = base_url_problems(config.base_url)
    if not config.model.strip():
        problems.append("the model id is empty")
    if not 1 <= config.max_images <= PROTOCOL_MAX_IMAGES:
        problems.append(f"max images must be 1-{PROTOCOL_MAX_IMAGES} (the protocol's limit), got {config.max_images}")
    if not 1 <= config.max_frames <= PROTOCOL_MAX_FRAMES:
        problems.append(f"max frames must be 1-{PROTOCOL_MAX_FRAMES} (the protocol's limit), got {config.max_frames}")
    if config.max_tokens < 1:
        problems.append(f"max tokens must be at least 1, got {config.max_tokens}")
    if config.timeout <= 0:
        problems.append(f"the request timeout must be positive, got {config.timeout}")
    if config.retries < 0 or config.backoff < 0 or config.max_wait < 0:
        problems.append("retries, backoff and max wait cannot be negative")
    if config.length_parameter not in LENGTH_PARAMETERS:
        problems.append(f"the length parameter must be one of {', '.join(LENGTH_PARAMETERS)}, "
                        f"got {config.length_parameter}")
    problem = plain_http_problem(config) if not problems else None
    return problems + ([problem] if problem else [])


def plain_http_problem(config: EndpointConfig) -> str | None:
    """An API key goes only over https; plain http only to this machine, when allowed for development."""
    from evaluator.generation.transport import is_loopback_host

    parts = urlsplit(config.base_url.strip())
    if parts.scheme != "http" or not config.api_key:
        return None
    if not is_loopback_host(parts.hostname or ""):
        return "an API key is only sent over https: give an https:// base URL (or no key)"
    if not config.allow_plain_http:
        return (f"an API key is only sent over https; plain http to this machine needs the development "
                f"option (--allow-plain-http, or {PLAIN_HTTP_ENV}=1)")
    return None


def base_url_problems(url: str) -> list[str]:
    """Why ``url`` is not a usable base URL (http or https, a host, no credentials or query)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port  # raises on a malformed port
    except ValueError as exc:
        return [f"the base URL is malformed ({exc})"]
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ["the base URL must start with http:// or https:// and name a host (e.g. https://api.example.com/v1)"]
    if parts.username or parts.password:
        return ["the base URL must not hold credentials; give the key as the API key"]
    if parts.query or parts.fragment:
        return ["the base URL must not have a query string or fragment"]
    return [] if port is None or port > 0 else ["the base URL's port must be positive"]

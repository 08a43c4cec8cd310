"""Endpoint settings and their checks, the protocol's limits, and the generator's two errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

PROTOCOL_MAX_IMAGES = 70
PROTOCOL_MAX_FRAMES = 64
FRAME_RATE = 1  # frames per second sampled from the recording
TEMPERATURE = 0
DETAIL_CHARS = 300


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
                "max_images": self.max_images, "max_frames": self.max_frames, "temperature": TEMPERATURE,
                "frame_rate": FRAME_RATE, "timeout": self.timeout, "retries": self.retries}


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
    return problems


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

"""The operator's settings for protocol iwr-official, checked before anything is scored.

Unusable settings stop the command with one line saying what to set: no endpoint, no model, no
weights (or weights whose sums do not match), no optional environment, an endpoint that cannot
be reached or refuses the key. The key itself is read here, from the variable the operator names,
and handed to the relay only: it is never logged, written or passed into the job.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from evaluator.official.relay import Budget

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
REQUEST_TIMEOUT_S = 120.0
RETRIES = 4
BACKOFF_S = 2.0
MAX_WAIT_S = 60.0
OFFICIAL_MODULES = ("torch", "transformers", "easyocr", "easyocr_en_models")


class SettingsError(ValueError):
    """The official judge cannot run with these settings; the message is one line saying what to set."""


@dataclass
class OfficialSettings:
    base_url: str
    judge_model: str
    grounding_model: str | None = None
    key_env: str = DEFAULT_KEY_ENV
    weights: Path | None = None
    weights_sha256: dict = field(default_factory=dict)
    device: str = "cpu"
    cache_dir: Path | None = None
    budget: Budget = field(default_factory=Budget)
    visual_factory: str | None = None  # tests and other model sets: "module:callable" building the models
    retries: int = RETRIES
    backoff_s: float = BACKOFF_S
    timeout_s: float = REQUEST_TIMEOUT_S

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).hostname or ""

    def models(self) -> dict:
        return {"judge": self.judge_model, "grounding": self.grounding_model or self.judge_model}

    def endpoint(self, environ=None):
        """The relay's endpoint settings, with the key read from the named variable."""
        from evaluator.generation.config import ConfigError, EndpointConfig

        environ = os.environ if environ is None else environ
        try:
            return EndpointConfig(base_url=self.base_url, model=self.judge_model,
                                  api_key=environ.get(self.key_env, ""), max_tokens=512, timeout=self.timeout_s,
                                  retries=self.retries, backoff=self.backoff_s, max_wait=MAX_WAIT_S, stream=False)
        except ConfigError as exc:
            raise SettingsError(f"--judge-base-url: {exc}") from None

    def visual_spec(self) -> dict:
        """What a worker needs to load the visual models (plain data, no secret)."""
        if self.visual_factory:
            return {"factory": self.visual_factory, "device": self.device}
        return {"weights": str(self.weights), "sha256": dict(self.weights_sha256), "device": self.device}


def job_settings(socket: str, judge_model: str, grounding_model: str | None, host: str, visual: dict) -> dict:
    """The judge settings a job scores with (``runner.score(official=...)``): plain data, never a key."""
    grounding = grounding_model or judge_model
    return {"socket": socket, "judge_model": judge_model, "grounding_model": grounding, "host": host,
            "models": {"judge": judge_model, "grounding": grounding}, "visual": visual}


def check_settings(settings: OfficialSettings, environ=None, here: bool = True) -> None:
    """Raise SettingsError for the first thing the operator must set (no network call).

    ``here``: the visual models run in this Python (its optional environment is checked); a job run in an
    evaluator container has them in its image instead, and only the weights are checked here.
    """
    if not settings.base_url:
        raise SettingsError("protocol iwr-official needs a judge endpoint: set --judge-base-url URL "
                            "(an OpenAI-compatible API, e.g. https://api.example.com/v1)")
    if not settings.judge_model:
        raise SettingsError("protocol iwr-official needs the judge's model id: set --judge-model ID")
    settings.endpoint(environ)  # a malformed URL, or a key over plain http
    if settings.device not in ("cpu", "cuda"):
        raise SettingsError(f"--device must be cpu or cuda, got {settings.device!r}")
    if settings.visual_factory:
        return
    missing = [name for name in OFFICIAL_MODULES if importlib.util.find_spec(name) is None] if here else []
    if missing:
        raise SettingsError(f"the official visual models need the optional environment (missing "
                            f"{', '.join(missing)}): run scripts/setup-official.sh and score with "
                            f".venv-official/bin/python")
    if settings.weights is None:
        raise SettingsError("protocol iwr-official needs the DINOv2-base weights: set --official-weights DIR")
    from evaluator.official.visual import DINOV2_BASE_SHA256, WeightsError, verify_weights

    try:
        settings.weights_sha256 = settings.weights_sha256 or dict(DINOV2_BASE_SHA256)
        verify_weights(settings.weights, settings.weights_sha256)
    except WeightsError as exc:
        raise SettingsError(str(exc)) from None


PREFLIGHT = [{"role": "user", "content": "This is a connection check. Reply with the single word OK."}]


def preflight(relay, settings: OfficialSettings) -> None:
    """One small call through the relay: an unreachable endpoint or a refused key stops here, nothing scored.

    The check is cached like every call, so a warm cache scores with no request at all.
    """
    reply = relay.answer({"purpose": "preflight", "model": settings.judge_model, "messages": PREFLIGHT,
                          "max_tokens": 16})
    if reply.get("ok"):
        return
    error = str(reply.get("error") or "")
    if "401" in error or "403" in error:
        raise SettingsError(f"the judge endpoint at {settings.host} refused the key (HTTP 401/403): set "
                            f"{settings.key_env} to a valid key (or name another variable with --judge-key-env)")
    raise SettingsError(f"the judge endpoint at {settings.host} is not usable ({error}): check --judge-base-url")

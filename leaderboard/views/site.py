"""Site-wide pages: health check, the About page and the command-line client's download."""

import functools
import json
from pathlib import Path

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from leaderboard import official
from leaderboard.health import run_checks
from leaderboard.models.tasks import Split


@require_GET
@never_cache
def healthz(request):
    checks = run_checks()
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if healthy else "unhealthy", "checks": checks}, status=200 if healthy else 503)


@require_GET
def about(request):
    """What IWR-Bench is, how it is scored and how to submit, with this site's own quotas."""
    quotas = [{"split": split, "limit": int(settings.SUBMISSION_QUOTAS.get(split, 0))}
              for split in (Split.TEST, Split.DEV)]
    return render(request, "leaderboard/about.html",
                  {"quotas": quotas, "max_bundle_mb": settings.SUBMISSION_MAX_BUNDLE_MB, "official": _official(),
                   "validation": judge_validation(), "default_protocol": _default_protocol(),
                   "det_versions": det_versions()})


def _default_protocol() -> dict:
    """The protocol a bare ``iwr-det`` means on this site (the evaluator's registry decides, not the page)."""
    from evaluator.protocols import get_protocol

    protocol = get_protocol()
    return {"name": protocol.name, "version": protocol.version, "full_name": protocol.full_name}


@functools.cache
def det_versions() -> list[dict]:
    """Every registered version of the default protocol's family, newest first: what it changed (its description),
    its parameter fingerprint (what a stored score's protocol stands for) and whether a bare name means it."""
    from evaluator.protocols import PROTOCOLS, get_protocol

    default = get_protocol()
    family = {p.full_name: p for p in PROTOCOLS.values() if p.name == default.name}
    return [{"full_name": p.full_name, "description": p.description, "fingerprint": p.fingerprint(),
             "default": p is default}
            for p in sorted(family.values(), key=lambda p: int(p.version), reverse=True)]


VALIDATION_FILE = Path(__file__).resolve().parents[1] / "data" / "judge_validation.json"


@functools.cache
def judge_validation() -> dict:
    """The calibration figures of each deterministic protocol, per half, as measured (leaderboard/data)."""
    document = json.loads(VALIDATION_FILE.read_text(encoding="utf-8"))
    for run in document["runs"]:
        for figures in run["halves"].values():
            figures["relations_pct"] = round(100 * figures["relations_held"] / figures["relations_total"], 1)
    return document


def _official() -> dict:
    """What the About page says of the paper's judge here: which models, and which splits it is sent."""
    config = official.judge_settings()
    return {"available": not official.unavailable_reason(), "judge_model": config.judge_model,
            "grounding_model": config.grounding_model, "host": official.judge_host(),
            "test_judged": official.may_judge_split(Split.TEST)}


@require_GET
def client_download(request):
    """The command-line client as one file (``evaluator/submit_client.py``, Python's standard library
    only), named with its version, so a researcher needs nothing but python3 to submit."""
    from evaluator import submit_client  # stdlib-only module: importing it runs nothing

    body = Path(submit_client.__file__).read_bytes()
    response = HttpResponse(body, content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="iwr-submit-{submit_client.__version__}.py"'
    response["X-Client-Version"] = submit_client.__version__
    return response

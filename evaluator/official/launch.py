"""``score --protocol iwr-official`` (and ``container-job``), outside the sandbox: check the settings, start the
relay, run the job.

The order matters: every setting is checked and the endpoint is asked once (preflight) before
the job starts, so an unusable configuration stops the command with one line and nothing scored.
The relay then serves the job for its whole run; its counters are written into results.json's
``judge`` record when the job is done (the job itself never sees them, nor the key).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from evaluator.official.config import OfficialSettings, SettingsError, check_settings, preflight
from evaluator.official.relay import AnswerCache, Budget, Relay

log = logging.getLogger("evaluator.official")


def settings_from_args(args) -> OfficialSettings:
    from evaluator.official.visual import WeightsError, read_sums_file
    from evaluator.protocols import get_protocol

    llm = get_protocol("iwr-official").params["llm"]
    try:
        pinned = read_sums_file(args.official_weights_sha256) if args.official_weights_sha256 else {}
    except (OSError, WeightsError) as exc:
        raise SettingsError(f"--official-weights-sha256: {exc}") from None
    budget = Budget(requests=args.judge_budget_requests or llm["budget_requests"],
                    tokens=args.judge_budget_tokens or llm["budget_tokens"])
    cache = args.judge_cache or Path(os.path.expanduser("~")) / ".cache" / "iwr-bench" / "judge"
    return OfficialSettings(base_url=args.judge_base_url or "", judge_model=args.judge_model or "",
                            grounding_model=args.grounding_model, key_env=args.judge_key_env,
                            weights=args.official_weights, weights_sha256=pinned, device=args.device,
                            cache_dir=cache, budget=budget,
                            visual_factory=os.environ.get("IWR_OFFICIAL_VISUAL_FACTORY") or None)


def run_official(args, run_job, socket_folder: Path | None = None, here: bool = True) -> int:
    """Check, start the relay, run ``run_job(args)`` (sandboxed, here or in a container) with the relay's
    socket, record. ``socket_folder``: where the relay listens (default: a new private folder); ``here``:
    the visual models run in this Python, not in an evaluator container's image."""
    from evaluator.cli import JudgeUnusableError

    try:
        settings = settings_from_args(args)
        check_settings(settings, here=here)
        relay = Relay(settings.endpoint(), AnswerCache(settings.cache_dir), settings.budget)
        preflight(relay, settings)
    except SettingsError as exc:
        raise JudgeUnusableError(str(exc)) from None
    with relay:
        args.judge_socket = str(relay.serve(socket_folder))
        args.official_visual = json.dumps(settings.visual_spec())
        args.judge_stats = relay.stats.as_dict
        code = run_job(args)
        stats = relay.stats.as_dict()
    _record_stats(args.out / "results.json", stats)
    print(f"judge: {stats['requests']} request(s), {stats['cache_hits']} from the cache, "
          f"{stats['input_tokens']}+{stats['output_tokens']} tokens, {stats['retries']} retries", file=sys.stderr)
    return code


def _record_stats(results: Path, stats: dict) -> None:
    """The relay's final counters into the job's results.json (written by the job without them)."""
    try:
        document = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # the job wrote nothing: it already said why
    if isinstance(document.get("judge"), dict):
        document["judge"].update(stats)
        tmp = results.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(document, indent=1, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, results)

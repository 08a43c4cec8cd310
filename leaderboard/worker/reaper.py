"""The reaper over both kinds of claimed work: evaluations and generation jobs.

Celery beat runs :func:`reap` every ``REAPER_INTERVAL_SECONDS`` and a (re)starting worker
node runs :func:`reap_node` for itself first: a dead worker's work is queued again (or, after
its last attempt, failed without charging anyone), lost wake-ups are sent again, and job
folders and job containers no live claim works in are removed (:mod:`leaderboard.worker.containers`).
"""

from __future__ import annotations

from leaderboard.worker import containers, evaluator_run, generating, scoring


def reap(now=None) -> dict:
    """How many evaluations were requeued, failed, lost (the claim moved on meanwhile) or
    redispatched, with the same counts for generation jobs under ``generation``."""
    counts = scoring.reap(now)
    # "queued": the evaluation report's word before both kinds of work shared one machinery.
    counts["queued"] = counts["requeued"]
    counts["generation"] = generating.reap(now)
    # After the re-queues (the attempts just given up on are no longer held), and before their folders go.
    counts["containers_removed"] = containers.remove_stray_containers()
    counts["job_folders_removed"] = evaluator_run.remove_ended_attempts()
    return counts


def reap_node(node: str) -> int:
    """Evaluations and generation jobs re-queued because ``node`` restarted while running them."""
    containers.remove_node_containers(node)  # the job containers its dead processes left running
    return scoring.reap_node(node) + generating.reap_node(node)

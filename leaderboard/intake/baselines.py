"""Baseline rows scored by the evaluator itself, on every split: reference pages (upper bound),
scripts-stripped snapshots (look right, do nothing) and empty pages (lower bound).

Each baseline is a public ``Submission(kind=baseline)`` owned by nobody and never charged,
queued like any submission. Queuing again is a no-op while the same protocol version already
has a live (queued, running or scored) evaluation of it.
"""

from __future__ import annotations

import tempfile
from functools import partial
from pathlib import Path

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction

from evaluator.baselines import KINDS, build_baselines
from evaluator.bundle import make_bundle_zip
from evaluator.protocols import get_protocol
from leaderboard.intake import dispatch
from leaderboard.intake.evaluations import queue_evaluation
from leaderboard.models import Evaluation, Submission
from leaderboard.storage import GROUND_TRUTH_PREFIX

ORGANISATION = "IWR-Bench maintainers"
LIVE = (Evaluation.Status.QUEUED, Evaluation.Status.RUNNING, Evaluation.Status.SCORED)


def existing(split: str, kind: str) -> Submission | None:
    return Submission.objects.filter(kind=Submission.Kind.BASELINE, split=split, model_name=KINDS[kind]).first()


def needs_scoring(split: str, kind: str, protocol) -> bool:
    submission = existing(split, kind)
    return submission is None or not submission.evaluations.filter(protocol=protocol.full_name,
                                                                   status__in=LIVE).exists()


def queue_baselines(split: str, data_path: Path, protocol_name: str = "iwr-det") -> list[Evaluation]:
    """Build and queue the baselines of ``split`` that are not scored under the protocol yet (a kind
    with no page at all, such as reference pages of tasks without reference data, is left out)."""
    protocol = get_protocol(protocol_name)
    move_out_of_media(split)
    kinds = [kind for kind in KINDS if needs_scoring(split, kind, protocol)]
    if not kinds:
        return []
    queued = []
    with tempfile.TemporaryDirectory(prefix="iwr-baselines-") as tmp:
        written = build_baselines(data_path, Path(tmp), kinds)
        for kind in kinds:
            if not written[kind]["written"]:
                continue  # no task has a reference page: an empty bundle could only fail, again on every run
            pages = {p.name: p for p in sorted((Path(tmp) / kind).iterdir()) if p.is_dir()}
            zipped = make_bundle_zip(pages, Path(tmp) / f"{kind}.zip")
            with transaction.atomic():
                submission = existing(split, kind) or _create(split, kind, zipped)
                evaluation = queue_evaluation(submission, protocol)
                transaction.on_commit(partial(dispatch.evaluation, evaluation.pk))
            queued.append(evaluation)
    return queued


def move_out_of_media(split: str) -> int:
    """Baseline bundles stored under MEDIA_ROOT by an earlier version move to the ground-truth store;
    returns how many moved."""
    moved = 0
    stale = Submission.objects.filter(kind=Submission.Kind.BASELINE, split=split).exclude(bundle="").exclude(
        bundle__startswith=GROUND_TRUTH_PREFIX)
    for submission in stale:
        old = submission.bundle.name
        with default_storage.open(old, "rb") as handle:
            new = default_storage.save(f"{GROUND_TRUTH_PREFIX}baselines/{Path(old).name}", File(handle))
        Submission.objects.filter(pk=submission.pk).update(bundle=new)
        default_storage.delete(old)
        moved += 1
    return moved


def _create(split: str, kind: str, zipped: Path) -> Submission:
    submission = Submission(kind=Submission.Kind.BASELINE, owner=None, split=split, model_name=KINDS[kind],
                            organisation=ORGANISATION, public=True, charged=False, open_weights=True,
                            description=_DESCRIPTIONS[kind], bundle_size=zipped.stat().st_size)
    # A reference baseline's bundle is the reference pages themselves: stored as ground truth.
    with open(zipped, "rb") as handle:
        submission.bundle.name = default_storage.save(f"{GROUND_TRUTH_PREFIX}baselines/{split}-{kind}.zip",
                                                      File(handle))
    submission.save()
    return submission


_DESCRIPTIONS = {
    "reference": "Each task's own reference page, submitted as a bundle: what a perfect reconstruction scores.",
    "snapshot": "The reference page's initial view with every script removed: it looks right and does nothing.",
    "empty": "An empty page for every task: the floor.",
}

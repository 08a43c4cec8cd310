"""The scoring pipeline: from a queued evaluation to stored scores, exactly once.

The database is the source of truth and the broker only a wake-up call:

- :func:`dispatch` sends a wake-up for an evaluation (after its row is committed).
- A woken worker runs :func:`run_next`: it picks the next evaluation in *fair* order
  (:func:`fair_queue`), claims it with one conditional UPDATE (queued -> running with a
  fresh claim token; no locks) and gives up quietly if another worker was faster.
- The claimed evaluation gets a job directory (the extracted bundle and the split's task
  data, read-only), the evaluator CLI runs on it as a child process, and every task result
  the evaluator writes is saved at once (``update_or_create``: idempotent), with the
  progress count and a heartbeat. A heartbeat that matches no row (cancelled, or taken
  over after the worker was presumed dead) stops the job.
- At the end the scores, confidence intervals, summary, artifacts and the scrubbed
  evaluator log are stored and the status becomes scored or failed, again only while the
  claim token still matches, so a job can never finish twice.
- :func:`reap` (periodically, and when a worker starts) re-queues running evaluations
  whose heartbeat went stale and re-sends wake-ups nobody picked up; it reaps the
  generation jobs of model-endpoint submissions too (:func:`leaderboard.generation.reap`).

Failures carry a kind and a reason a person can act on. Infrastructure failures (a dead
worker, the evaluator killed by a signal, an error in this process) are retried up to
``EVALUATION_MAX_ATTEMPTS`` claims and never charged to the submitter's quota; neither
are evaluator faults. A bundle the intake rules refuse, or a job over its time limit,
stays charged.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from leaderboard import quotas
from leaderboard.models import Evaluation, Task, TaskResult
from leaderboard.models.submissions import stored_task_finals
from leaderboard.models.tasks import Split

log = logging.getLogger(__name__)

Status = Evaluation.Status
Kind = Evaluation.FailureKind
SCORE_FIELDS = ("ifs", "vfs", "final", "low_level", "high_level")
CHARGED_KINDS = {Kind.BUNDLE, Kind.TIME_LIMIT}  # the submitter's doing; everything else is refunded
POLL_SECONDS = 0.25
STOP_GRACE_SECONDS = 10
LOG_LIMIT_CHARS = 200_000
FAIR_CANDIDATES = 200
HIDDEN = "[hidden]"


# --------------------------------------------------------------------------- waking workers


def dispatch(evaluation_id: int) -> bool:
    """Send the wake-up for a queued evaluation; False when the broker refused (the reaper resends)."""
    from leaderboard.tasks import evaluate

    Evaluation.objects.filter(pk=evaluation_id).update(dispatched_at=timezone.now())
    try:
        evaluate.apply_async(args=[evaluation_id], queue="evaluate", retry=True,
                             retry_policy={"max_retries": 2, "interval_start": 0.5})
    except Exception as exc:  # noqa: BLE001 - any broker failure: the row stays queued, the reaper retries
        log.warning("could not dispatch evaluation %s (%s); the reaper will retry", evaluation_id, exc)
        Evaluation.objects.filter(pk=evaluation_id, status=Status.QUEUED).update(dispatched_at=None)
        return False
    return True


def worker_name(hostname: str | None = None) -> str:
    """``<celery node name>:<pid>``: which process holds a claim (the node part finds orphans)."""
    return f"{hostname or socket.gethostname()}:{os.getpid()}"


# --------------------------------------------------------------------------- fair order


def fair_queue(now=None, limit: int = FAIR_CANDIDATES) -> list[int]:
    """Queued evaluation ids in the order they should run.

    Priority first (rescoring waits behind every user), then the owner with the fewest
    evaluations running or started within the fairness window (so one user's twenty
    submissions do not block another user's one), then age.
    """
    now = now or timezone.now()
    candidates = list(
        Evaluation.objects.filter(status=Status.QUEUED)
        .order_by("priority", "created_at", "pk")
        .values_list("pk", "priority", "created_at", "submission__owner_id")[:limit]
    )
    load = owner_load({owner for *_, owner in candidates}, now)
    candidates.sort(key=lambda row: (row[1], load.get(row[3], 0), row[2], row[0]))
    return [row[0] for row in candidates]


def owner_load(owner_ids: set, now) -> dict:
    """Owner id -> evaluations running or started recently (None stands for owner-less rows)."""
    since = now - timedelta(seconds=settings.EVALUATION_FAIRNESS_WINDOW_SECONDS)
    busy = Q(status=Status.RUNNING) | Q(started_at__gte=since)
    rows = (
        Evaluation.objects.filter(busy, submission__owner_id__in=[o for o in owner_ids if o is not None])
        .values("submission__owner_id").annotate(n=Count("pk"))
    )
    load = {row["submission__owner_id"]: row["n"] for row in rows}
    if None in owner_ids:
        load[None] = Evaluation.objects.filter(busy, submission__owner__isnull=True).count()
    return load


# --------------------------------------------------------------------------- claiming


def claim(evaluation_id: int, worker: str) -> str | None:
    """Queued -> running for this worker; returns the claim token, or None if someone else won."""
    token = uuid.uuid4().hex
    now = timezone.now()
    won = Evaluation.objects.filter(pk=evaluation_id, status=Status.QUEUED).update(
        status=Status.RUNNING, claim_token=token, worker=worker[:200], started_at=now, heartbeat_at=now,
        attempts=F("attempts") + 1, tasks_done=0,
    )
    return token if won else None


def run_next(hint_id: int | None = None, worker: str | None = None) -> int | None:
    """Claim and run the next evaluation in fair order (``hint_id`` is only the id of the
    wake-up that brought us here); returns the id run, or None when nothing was queued."""
    worker = worker or worker_name()
    for evaluation_id in fair_queue():
        token = claim(evaluation_id, worker)
        if token:
            log.info("worker %s runs evaluation %s (woken for %s)", worker, evaluation_id, hint_id)
            run_claimed(evaluation_id, token)
            return evaluation_id
    return None


def run_claimed(evaluation_id: int, token: str) -> None:
    """Run a claimed evaluation to its end; every outcome is stored, none is raised."""
    evaluation = Evaluation.objects.select_related("submission").get(pk=evaluation_id)
    job = Job(evaluation, token)
    try:
        try:
            outcome = job.run()
        except Exception as exc:  # noqa: BLE001 - our own or the machine's fault: retry, never charge
            log.exception("evaluation %s: worker error", evaluation_id)
            outcome = Outcome.retry(f"the scoring worker hit an internal error ({type(exc).__name__})")
        apply_outcome(evaluation, token, outcome, job)
    finally:
        job.cleanup()


# --------------------------------------------------------------------------- outcomes


@dataclass
class Outcome:
    status: str  # scored | failed | retry | lost
    kind: str = ""
    reason: str = ""
    results: dict | None = None

    @classmethod
    def failed(cls, kind: str, reason: str) -> Outcome:
        return cls("failed", kind, reason)

    @classmethod
    def retry(cls, reason: str) -> Outcome:
        return cls("retry", Kind.INFRASTRUCTURE, reason)


def apply_outcome(evaluation: Evaluation, token: str, outcome: Outcome, job: Job | None = None) -> None:
    log_text = job.scrubbed_log() if job else ""
    if outcome.status == "scored":
        store_scores(evaluation, token, outcome.results, log_text, job.out_dir if job else None)
    elif outcome.status == "failed":
        fail(evaluation, _holding(evaluation, token), outcome.kind, outcome.reason, log_text)
    elif outcome.status == "retry":
        requeue_or_fail(evaluation, _holding(evaluation, token), outcome.reason, log_text)
    else:
        log.info("evaluation %s: claim %s no longer holds; results discarded", evaluation.pk, token)


def _holding(evaluation: Evaluation, token: str):
    """The evaluation's row, only while this claim still holds it."""
    return Evaluation.objects.filter(pk=evaluation.pk, status=Status.RUNNING, claim_token=token)


def fail(evaluation: Evaluation, rows, kind: str, reason: str, log_text: str = "") -> bool:
    """``rows`` (the evaluation under a claim condition) -> failed; refunds unless a charged kind."""
    with transaction.atomic():
        done = rows.update(status=Status.FAILED, failure_kind=kind, failure_reason=reason,
                           log=log_text, finished_at=timezone.now(), claim_token="")
        if done and kind not in CHARGED_KINDS and not evaluation.is_rescore:
            quotas.refund(evaluation.submission)
        if done:
            transaction.on_commit(partial(_finished, evaluation.pk))
    return bool(done)


def requeue_or_fail(evaluation: Evaluation, rows, reason: str, log_text: str = "") -> str:
    """An infrastructure failure of ``rows`` (the evaluation under a claim condition): queue it
    again while attempts remain, else fail it (never charged). Returns queued, failed or lost."""
    evaluation.refresh_from_db(fields=["attempts"])
    if evaluation.attempts >= settings.EVALUATION_MAX_ATTEMPTS:
        final = f"{reason}; gave up after {evaluation.attempts} attempts. This is not charged to your quota."
        return "failed" if fail(evaluation, rows, Kind.INFRASTRUCTURE, final, log_text) else "lost"
    if rows.update(status=Status.QUEUED, claim_token="", worker="", heartbeat_at=None, tasks_done=0):
        log.warning("evaluation %s re-queued: %s", evaluation.pk, reason)
        transaction.on_commit(partial(dispatch, evaluation.pk))
        return "queued"
    return "lost"


def _finished(evaluation_id: int) -> None:
    """After a scoring (or a failure) is committed: invalidate every cached leaderboard page, build
    the most read ones again right away so the next reader does not pay for it, and tell the
    submitter. The scoring is already stored: none of this may undo or fail it."""
    from leaderboard import notifications
    from leaderboard.cache import bump_generation

    steps = (("cache invalidation", bump_generation), ("leaderboard warm-up", warm_leaderboard),
             ("notification", partial(notifications.evaluation_finished, evaluation_id)))
    for name, step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - a cache outage or a mail server error must not fail the job
            log.exception("evaluation %s: %s failed (the results are stored)", evaluation_id, name)


def warm_leaderboard() -> None:
    from leaderboard.views.rankings import warm_default_views

    warm_default_views()


# --------------------------------------------------------------------------- storing results


def task_result_fields(result: dict) -> dict:
    fields = {name: float(result.get(name) or 0.0) for name in SCORE_FIELDS}
    fields["steps_passed"] = int(result.get("steps_passed") or 0)
    fields["steps_total"] = int(result.get("steps_total") or 0)
    fields["steps"] = result.get("steps") or []
    fields["error"] = str(result.get("error") or "")
    return fields


def save_task_result(evaluation: Evaluation, task: Task, result: dict) -> TaskResult:
    """Store one task's result; saving it again (a retried job) overwrites, never duplicates."""
    row, _ = TaskResult.objects.update_or_create(evaluation=evaluation, task=task,
                                                 defaults=task_result_fields(result))
    return row


def confidence_intervals(results: dict) -> dict:
    """95 % bootstrap intervals over tasks of every stored score: Final, IFS, VFS, Low-level and
    High-level (failed tasks count 0)."""
    from evaluator.scoring import bootstrap_ci, effective_score

    scores = [effective_score(result) for result in results.values()]
    fields = {}
    for name in SCORE_FIELDS:
        if scores:
            fields[f"{name}_ci_low"], fields[f"{name}_ci_high"] = bootstrap_ci([s[name] for s in scores])
    return fields


def store_scores(evaluation: Evaluation, token: str, document: dict, log_text: str, out_dir: Path | None) -> bool:
    """Save every task result, the summary and the intervals; running -> scored once."""
    tasks = _job_tasks(evaluation)
    task_results = {key: value for key, value in document.get("tasks", {}).items() if key in tasks}
    summary = document.get("summary") or {}
    fields = {name: summary.get(name) for name in SCORE_FIELDS}
    fields.update(confidence_intervals(task_results))
    with transaction.atomic():
        for key, result in task_results.items():
            save_task_result(evaluation, tasks[key], result)
        fields["task_finals"] = stored_task_finals(evaluation.pk)  # read back: exactly what was stored
        won = _holding(evaluation, token).update(
            status=Status.SCORED, finished_at=timezone.now(), claim_token="", log=log_text,
            evaluator_version=str(document.get("evaluator_version") or "")[:40],
            protocol=str(document.get("protocol") or evaluation.protocol)[:40],
            summary=summary, n_tasks=int(summary.get("n_tasks") or len(task_results)),
            tasks_done=len(task_results), tasks_total=len(tasks),
            artifacts_dir=str(evaluation.pk), **fields,
        )
        if won:
            transaction.on_commit(partial(_finished, evaluation.pk))
    if won and out_dir is not None:
        publish_artifacts(evaluation.pk, out_dir)
    return bool(won)


def publish_artifacts(evaluation_id: int, out_dir: Path) -> Path:
    """Move the job's output to ARTIFACTS_ROOT/<id>/ (replacing an earlier attempt's)."""
    target = Path(settings.ARTIFACTS_ROOT) / str(evaluation_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    shutil.move(str(out_dir), str(target))
    return target


def _job_tasks(evaluation: Evaluation) -> dict[str, Task]:
    from leaderboard.submissions import split_tasks

    return {task.key: task for task in split_tasks(evaluation.submission.split)}


# --------------------------------------------------------------------------- ground-truth secrecy


def secrets_of(task: Task) -> list[str]:
    """Strings of a task that only staff may see: descriptions, assertions, typed text, the site."""
    record = task.record if isinstance(task.record, dict) else {}
    found = [record.get("source_website") or ""]
    for action in record.get("action_sequence") or []:
        params = action.get("parameters") or {}
        found += [params.get("description") or "", params.get("text") or "", action.get("logical_assertion") or ""]
    return [text for text in found if isinstance(text, str) and len(text.strip()) >= 4]


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` with every secret (case-insensitive) replaced by [hidden]."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = re.sub(re.escape(secret.strip()), HIDDEN, text, flags=re.IGNORECASE)
    return text


def split_secrets(tasks) -> list[str]:
    """Secrets to scrub from anything non-staff see of a job: test-split tasks only (dev is public)."""
    return [secret for task in tasks if task.split == Split.TEST for secret in secrets_of(task)]


# --------------------------------------------------------------------------- the job


class Job:
    """One claimed evaluation: job directory, evaluator process, live results."""

    def __init__(self, evaluation: Evaluation, token: str):
        self.evaluation = evaluation
        self.token = token
        self.dir = Path(settings.JOBS_ROOT) / str(evaluation.pk)
        self.out_dir = self.dir / "out"
        self.log_path = self.dir / "evaluator.log"
        self.tasks: dict[str, Task] = {}
        self.saved: set[str] = set()
        self.progress_offset = 0
        self.process: subprocess.Popen | None = None
        self.container_name: str | None = None

    # -- lifecycle

    def run(self) -> Outcome:
        problem = self.prepare()
        if problem:
            return problem
        self.start()
        return self.watch()

    def prepare(self) -> Outcome | None:
        """Build the job directory; an Outcome when the job cannot run at all."""
        from evaluator.bundle import BundleError, extract_bundle
        from evaluator.protocols import get_protocol
        from leaderboard.submissions import copy_bundle
        from leaderboard.tasksets import write_job_dataset

        try:
            get_protocol(self.evaluation.protocol)
        except ValueError:
            return Outcome.failed(Kind.EVALUATOR, f"Protocol {self.evaluation.protocol} is no longer available on "
                                                  "this server; a maintainer will rescore. Not charged.")
        self.tasks = _job_tasks(self.evaluation)
        if not self.tasks:
            return Outcome.failed(Kind.EVALUATOR, "The split has no published tasks any more. Not charged.")
        self.cleanup()
        self.dir.mkdir(parents=True)
        Evaluation.objects.filter(pk=self.evaluation.pk).update(tasks_total=len(self.tasks))
        self.data_path = write_job_dataset(self.tasks.values(), self.dir)
        zipped = copy_bundle(self.evaluation.submission, self.dir / "bundle.zip")
        try:
            extract_bundle(zipped, self.dir / "bundle", set(self.tasks))
        except BundleError as exc:
            return Outcome.failed(Kind.BUNDLE, "The bundle could not be used: " + "; ".join(exc.problems))
        finally:
            zipped.unlink()
        make_read_only(self.dir / "bundle")
        return None

    def command(self) -> list[str]:
        if settings.EVALUATOR_SANDBOX == "container":
            return self.container_command()
        base = shlex.split(settings.EVALUATOR_COMMAND) or [sys.executable, "-m", "evaluator"]
        command = [*base, "score", "--data", str(self.data_path), "--bundle", str(self.dir / "bundle"),
                   "--out", str(self.out_dir), "--protocol", self.evaluation.protocol,
                   "--time-limit", str(settings.EVALUATION_TIME_LIMIT_SECONDS)]
        if settings.EVALUATOR_WORKERS:
            command += ["--workers", str(settings.EVALUATOR_WORKERS)]
        if settings.EVALUATOR_SANDBOX:
            command += ["--sandbox", settings.EVALUATOR_SANDBOX]
        # Reference screenshots are the same for every submission: their OCR is kept between jobs.
        command += ["--ocr-cache", str(ocr_cache_dir())]
        return command + shlex.split(settings.EVALUATOR_EXTRA_ARGS)  # last: an operator's options win

    def container_command(self) -> list[str]:
        """``docker run`` of a fresh evaluator container fed this job directory (evaluator/container.py)."""
        from evaluator import container

        job = {"data": self.data_path.relative_to(self.dir).as_posix(), "bundle": "bundle", "tasks": None,
               "protocol": self.evaluation.protocol, "workers": settings.EVALUATOR_WORKERS or None}
        (self.dir / "job.json").write_text(json.dumps(job))
        container.prepare_job_dir(self.dir)
        self.container_name = f"iwr-eval-{self.evaluation.pk}-{self.token[:8]}"
        return container.run_command(self.dir, settings.EVALUATOR_IMAGE, self.container_name,
                                     container_limits(), settings.CONTAINER_ENGINE)

    def remove_container(self) -> None:
        """A container outlives a killed ``docker run`` client: stop and remove it explicitly."""
        if self.container_name:
            subprocess.run([settings.CONTAINER_ENGINE, "rm", "--force", self.container_name], capture_output=True)

    def start(self) -> None:
        with open(self.log_path, "wb") as log_file:
            self.process = subprocess.Popen(
                self.command(), cwd=settings.BASE_DIR, stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent,
                env={**os.environ, "OMP_THREAD_LIMIT": "1"},
            )
        self.started = time.monotonic()

    def watch(self) -> Outcome:
        """Save results as they appear, beat the heart, enforce the limit, notice a lost claim."""
        limit = settings.EVALUATION_TIME_LIMIT_SECONDS
        next_beat = 0.0
        while True:
            self.collect()
            now = time.monotonic()
            if now >= next_beat:
                if not self.heartbeat():
                    self.stop()
                    return Outcome("lost")
                next_beat = now + settings.EVALUATION_HEARTBEAT_SECONDS
            returncode = self.process.poll()
            if returncode is not None:
                self.collect()
                return self.outcome(returncode)
            if now - self.started > limit + STOP_GRACE_SECONDS:
                self.stop()
                return Outcome.failed(Kind.TIME_LIMIT, time_limit_reason(limit))
            time.sleep(POLL_SECONDS)

    def heartbeat(self) -> bool:
        return bool(_holding(self.evaluation, self.token).update(heartbeat_at=timezone.now(),
                                                                  tasks_done=len(self.saved)))

    def stop(self) -> None:
        """Terminate the evaluator and everything it started (its own process group)."""
        if self.process is None or self.process.poll() is not None:
            self.remove_container()
            return
        _signal_group(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            _signal_group(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.remove_container()

    def cleanup(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.stop()
        self.remove_container()
        if self.dir.exists():
            for path, _dirs, _files in os.walk(self.dir):
                os.chmod(path, 0o700)  # make_read_only's folders must be writable again to be removed
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- results

    def collect(self) -> None:
        """Save the result of every task the evaluator reported finished since the last look."""
        for key in self.new_progress_keys():
            if key in self.tasks and key not in self.saved:
                result = _read_json(self.out_dir / "tasks" / key / "result.json")
                if result is not None:
                    save_task_result(self.evaluation, self.tasks[key], result)
                    self.saved.add(key)

    def new_progress_keys(self) -> list[str]:
        path = self.out_dir / "progress.jsonl"
        try:
            with open(path, "rb") as handle:
                handle.seek(self.progress_offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits for the next look
        self.progress_offset += len(complete)
        keys = []
        for line in complete.splitlines():
            try:
                keys.append(str(json.loads(line)["task"]))
            except (ValueError, KeyError, TypeError):
                continue
        return keys

    def outcome(self, returncode: int) -> Outcome:
        tail = self.log_tail()
        if self.container_name and returncode != 0 and self.container_oom_killed():
            return Outcome.failed(Kind.EVALUATOR, f"The evaluator container exceeded its memory limit "
                                                  f"({settings.EVALUATOR_MEMORY}) and was stopped. A page that "
                                                  "allocates without bound is the usual cause; check the log.")
        if returncode < 0:
            return Outcome.retry(f"the evaluator was killed by signal {-returncode}")
        if returncode != 0:
            if "time limit" in tail:
                return Outcome.failed(Kind.TIME_LIMIT, time_limit_reason(settings.EVALUATION_TIME_LIMIT_SECONDS))
            return Outcome.failed(Kind.EVALUATOR, evaluator_fault_reason(returncode, tail))
        document = _read_json(self.out_dir / "results.json")
        if not isinstance(document, dict) or not isinstance(document.get("tasks"), dict):
            return Outcome.failed(Kind.EVALUATOR, "The evaluator finished without writing its results. "
                                                  "A maintainer has the log. Not charged to your quota.")
        return Outcome("scored", results=document)

    def container_oom_killed(self) -> bool:
        from evaluator import container

        state = container.inspect_state(self.container_name, settings.CONTAINER_ENGINE) or {}
        return bool(state.get("OOMKilled"))

    def log_text(self) -> str:
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(max(0, self.log_path.stat().st_size - LOG_LIMIT_CHARS))
                return handle.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def log_tail(self) -> str:
        lines = [line for line in self.scrubbed_log().splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def scrubbed_log(self) -> str:
        return scrub(self.log_text(), split_secrets(self.tasks.values()))


def ocr_cache_dir() -> Path:
    """Where the evaluator keeps reference-side OCR results between jobs (on this machine)."""
    return Path(settings.DATA_DIR) / "ocr-cache"


def container_limits():
    from evaluator.container import ContainerLimits

    return ContainerLimits(memory=settings.EVALUATOR_MEMORY, cpus=settings.EVALUATOR_CPUS,
                           pids=settings.EVALUATOR_PIDS, wall_clock_s=settings.EVALUATION_TIME_LIMIT_SECONDS)


def time_limit_reason(limit: int) -> str:
    return (f"Scoring took longer than the limit of {limit // 60} min {limit % 60} s and was stopped. "
            "A page that never settles (endless scripts, huge layouts) is the usual cause; check the log.")


def evaluator_fault_reason(returncode: int, last_line: str) -> str:
    detail = f" Last message: {last_line[:300]}" if last_line else ""
    return (f"The evaluator stopped with exit status {returncode}. This is a fault on our side and is not "
            f"charged to your quota; maintainers can see the log.{detail}")


# --------------------------------------------------------------------------- the reaper


def reap(now=None) -> dict:
    """Re-queue running evaluations whose worker stopped beating, re-send lost wake-ups."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.EVALUATION_STALE_SECONDS)
    counts = {"queued": 0, "failed": 0, "lost": 0, "redispatched": 0}
    for evaluation in Evaluation.objects.select_related("submission").filter(status=Status.RUNNING,
                                                                             heartbeat_at__lt=stale):
        rows = _holding(evaluation, evaluation.claim_token).filter(heartbeat_at__lt=stale)
        counts[_recover(evaluation, rows, f"the worker {evaluation.worker} stopped responding")] += 1
    unsent = now - timedelta(seconds=settings.EVALUATION_REDISPATCH_SECONDS)
    for evaluation_id in Evaluation.objects.filter(
        Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=unsent), status=Status.QUEUED
    ).values_list("pk", flat=True):
        counts["redispatched"] += dispatch(evaluation_id)
    counts["generation"] = _reap_generation(now)
    return counts


def _reap_generation(now) -> dict:
    """Generation jobs of model-endpoint submissions are reaped on the same schedule."""
    from leaderboard import generation

    return generation.reap(now)


def reap_node(node: str) -> int:
    """A worker node (re)starting: whatever it was running before is dead; re-queue it now."""
    orphans = Evaluation.objects.select_related("submission").filter(status=Status.RUNNING,
                                                                     worker__startswith=f"{node}:")
    recovered = 0
    for evaluation in orphans:
        rows = _holding(evaluation, evaluation.claim_token)
        recovered += _recover(evaluation, rows, f"the worker {node} restarted") == "queued"
    from leaderboard import generation

    return recovered + generation.reap_node(node)  # the node's generation jobs died with it too


def _recover(evaluation: Evaluation, rows, reason: str) -> str:
    with transaction.atomic():
        return requeue_or_fail(evaluation, rows, reason)


# --------------------------------------------------------------------------- helpers


def make_read_only(folder: Path) -> None:
    """Nobody writes job inputs; everyone may read them (the sandboxed browser user too)."""
    for path, _dirs, files in os.walk(folder):
        for name in files:
            os.chmod(os.path.join(path, name), 0o444)
        os.chmod(path, 0o555)  # noqa: S103 - read and traverse only, no write bit


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _die_with_parent() -> None:
    """In the evaluator child: be killed when the worker dies, even by SIGKILL (Linux)."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

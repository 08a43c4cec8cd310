"""The evaluator run of one claimed evaluation: its job folder, the evaluator process, its live results.

:mod:`leaderboard.worker.scoring` claims an evaluation and runs it as an :class:`EvaluatorRun`, which

- builds the job directory, one per attempt (JOBS_ROOT/<evaluation>/attempt-<n>): the extracted
  bundle and the split's task data, read-only; a heartbeat thread keeps the claim alive while it
  is built and the evaluator started;
- runs the evaluator CLI on it as a child process in its own process group (directly, in the
  evaluator's sandbox, or in a fresh container: :meth:`EvaluatorRun.command`), with a reference OCR
  cache kept between jobs;
- starts the score command with the evaluator's allow-listed environment only
  (:func:`evaluator.isolation.launcher_environment`), never the worker's secrets;
- reads everything the job wrote through :mod:`evaluator.outputs` (a page that escaped its browser
  controls it): checked task results, ``results.json`` with its summary recomputed, only allowed
  artifact files, a bounded log; a broken rule fails the job as the pages' doing;
- saves every task result the evaluator reports at once (idempotent) and beats the heart while
  the claim holds; it stops the evaluator when the claim is gone or the time limit has passed;
- ends in an :class:`Outcome` (scored, failed, retry or lost) for scoring to store, with
  the evaluator log scrubbed of held-out ground truth (:mod:`leaderboard.secrecy`).
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import OperationalError

from evaluator.outputs import (
    OutputError,
    copy_artifacts,
    read_appended,
    read_log_tail,
    read_results,
    read_task_result,
)
from leaderboard import official
from leaderboard.heldout import failed_run, rejected_output, time_limit_reason
from leaderboard.models import Evaluation, Task, TaskResult
from leaderboard.models.submissions import SCORE_FIELDS, copy_bundle
from leaderboard.models.tasks import Split
from leaderboard.secrecy import TASK_LINES_HIDDEN, job_level_log, scrub, split_secrets
from leaderboard.tasksets import split_tasks, write_job_dataset
from leaderboard.worker import containers
from leaderboard.worker.claims import EVALUATIONS
from leaderboard.worker.launch import die_with_parent, evaluator_options, job_environment, ocr_cache_dir

log = logging.getLogger(__name__)
Kind = Evaluation.FailureKind
POLL_SECONDS = 0.25
STOP_GRACE_SECONDS = 10
LOG_LIMIT_CHARS = 200_000


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


# --------------------------------------------------------------------------- task results


def job_tasks(evaluation: Evaluation) -> dict[str, Task]:
    """The tasks an evaluation is scored on, by key."""
    return {task.key: task for task in split_tasks(evaluation.submission.split)}


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


# --------------------------------------------------------------------------- the run


class EvaluatorRun:
    """One claimed evaluation's run of the evaluator: job directory, evaluator process, live results."""

    def __init__(self, evaluation: Evaluation, token: str):
        self.evaluation = evaluation
        self.token = token
        self.standby = None  # the evaluator started before this job (leaderboard/worker/standby.py)
        self.work_in(attempt_folder(evaluation.pk, evaluation.attempts))
        self.tasks: dict[str, Task] = {}
        self.saved: set[str] = set()
        self.progress_offset = 0
        self.process: subprocess.Popen | None = None
        self.container_name: str | None = None

    def work_in(self, folder: Path) -> None:
        self.dir = folder
        self.out_dir = self.dir / "out"
        self.checked_dir = self.dir / "checked"  # what was kept of out/, after every check
        self.log_path = self.dir / "evaluator.log"

    # -- lifecycle

    def run(self) -> Outcome:
        from evaluator.container import ContainerSandboxError
        from leaderboard.worker import standby

        self.standby = standby.take(self.evaluation.protocol)
        if self.standby is not None:  # its folder is this attempt's: the inputs go where it can read them
            self.work_in(self.standby.folder)

        # Preparing may take minutes (a large bundle, the task data, the OCR-fill container): a thread
        # beats all along, and the checks between steps notice a claim lost meanwhile.
        with EVALUATIONS.heartbeat(self.evaluation.pk, self.token):
            problem = self.prepare()
            if problem:
                return problem
            try:
                self.start()
            except ContainerSandboxError as exc:  # this machine cannot run the job safely: ours, not charged
                return Outcome.failed(Kind.INFRASTRUCTURE, f"{exc} Not charged.")
            except ClaimLost:
                return Outcome("lost")
        try:
            return self.watch()
        except OutputError as exc:
            self.stop()
            return Outcome(*rejected_output(exc.rule, str(exc)))

    def prepare(self) -> Outcome | None:
        """Build the job directory; an Outcome when the job cannot run at all."""
        from evaluator.bundle import BundleError, extract_bundle
        from evaluator.protocols import get_protocol

        try:
            get_protocol(self.evaluation.protocol)
        except ValueError:
            return Outcome.failed(Kind.EVALUATOR, f"Protocol {self.evaluation.protocol} is no longer available on "
                                                  "this server; a maintainer will rescore. Not charged.")
        if self.official:  # the judge's settings of this server, checked before anything is copied
            reason = official.job_refusal(self.evaluation)
            if reason:
                return Outcome.failed(Kind.INFRASTRUCTURE, f"{reason} Not charged.")
        self.tasks = job_tasks(self.evaluation)
        if not self.tasks:
            return Outcome.failed(Kind.EVALUATOR, "The split has no published tasks any more. Not charged.")
        if self.standby is None:
            self.cleanup()
            self.dir.mkdir(parents=True)
        Evaluation.objects.filter(pk=self.evaluation.pk).update(tasks_total=len(self.tasks))
        # Copying task data and a large bundle takes a while: the claim is kept alive between steps.
        self.data_path = write_job_dataset(self.tasks.values(), self.dir)
        if not self.heartbeat():
            return Outcome("lost")
        zipped = copy_bundle(self.evaluation.submission, self.dir / "bundle.zip")
        try:
            extract_bundle(zipped, self.dir / "bundle", set(self.tasks))
        except BundleError as exc:
            return Outcome.failed(Kind.BUNDLE, "The bundle could not be used: " + "; ".join(exc.problems))
        finally:
            zipped.unlink()
        make_read_only(self.dir / "bundle")
        return None if self.heartbeat() else Outcome("lost")

    @property
    def official(self) -> bool:
        return official.is_official(self.evaluation.protocol)

    @property
    def time_limit(self) -> int:
        """Official jobs wait for the judge and run CPU models: they have a limit of their own."""
        return settings.OFFICIAL_TIME_LIMIT_SECONDS if self.official else settings.EVALUATION_TIME_LIMIT_SECONDS

    def command(self) -> list[str]:
        if settings.EVALUATOR_SANDBOX == "container":
            return self.container_command()
        words = settings.OFFICIAL_EVALUATOR_COMMAND if self.official else ""  # the optional environment's evaluator
        base = shlex.split(words or settings.EVALUATOR_COMMAND) or [sys.executable, "-m", "evaluator"]
        command = [*base, "score", "--data", str(self.data_path), "--bundle", str(self.dir / "bundle"),
                   "--out", str(self.out_dir), "--protocol", self.evaluation.protocol,
                   "--time-limit", str(self.time_limit)]
        if self.official:
            command += official.judge_arguments(self.evaluation.judge_model, self.evaluation.grounding_model)
        return command + evaluator_options()

    def container_command(self) -> list[str]:
        """``docker run`` of a fresh evaluator container fed this job directory (evaluator/container.py)."""
        from evaluator import container

        job = {"data": self.data_path.relative_to(self.dir).as_posix(), "bundle": "bundle", "tasks": None,
               "protocol": self.evaluation.protocol, "workers": settings.EVALUATOR_WORKERS or None,
               "ocr_cache": container.OCR_CACHE_MOUNT}
        (self.dir / "job.json").write_text(json.dumps(job))
        container.prepare_job_dir(self.dir)
        self.container_name = f"iwr-eval-{self.evaluation.pk}-{self.token[:8]}"
        containers.remove_stray_containers()  # whoever started them died without removing them
        # The job reads the shared reference OCR cache read-only; a trusted container beside it fills it.
        # Both carry the attempt's labels, and each has its own wall clock inside the engine.
        labels = self.label_values()
        container.start_fill(self.data_path, ocr_cache_dir(), settings.EVALUATOR_IMAGE, f"{self.container_name}-ocr",
                             container_limits(), self.evaluation.protocol, settings.CONTAINER_ENGINE, labels)
        # The job's own clock runs past the worker's (limit + grace, when the worker stops it): it only
        # fires when nobody watches; then the job ends by the deadline its labels give the sweeps.
        limits = container_limits(wall_clock_s=self.time_limit + STOP_GRACE_SECONDS)
        if self.official:
            return self.official_container_command(labels, limits)
        command = container.run_command(self.dir, settings.EVALUATOR_IMAGE, self.container_name,
                                        limits, settings.CONTAINER_ENGINE, ocr_cache=ocr_cache_dir())
        return [*command[:2], *self.container_labels(labels), *command[2:]]

    def official_container_command(self, labels: dict[str, str], limits) -> list[str]:
        """The evaluator's ``container-job`` launcher (evaluator/commands/container_job.py): it runs the judge
        relay, the only holder of the key (from this process's environment, :meth:`environment`), and starts
        the same container with the official image, the relay's socket folder (in the job folder, removed with
        it) and the weights mounted read-only. It leaves the ended container to :meth:`remove_container`."""
        from evaluator import container

        container.check_chromium_sandbox()  # refused here, as ours, like the plain job's run_command
        base = shlex.split(settings.EVALUATOR_COMMAND) or [sys.executable, "-m", "evaluator"]
        return [*base, "container-job", str(self.dir), "--image", settings.OFFICIAL_EVALUATOR_IMAGE,
                "--engine", settings.CONTAINER_ENGINE, "--name", self.container_name,
                *(f"--label={name}={value}" for name, value in labels.items()),
                "--stop-timeout", str(STOP_GRACE_SECONDS), "--memory", limits.memory, "--cpus", str(limits.cpus),
                "--pids", str(limits.pids), "--time-limit", str(limits.wall_clock_s),
                "--ocr-cache", str(ocr_cache_dir()), "--judge-dir", str(self.dir / "judge"), "--keep-container",
                *official.judge_arguments(self.evaluation.judge_model, self.evaluation.grounding_model)]

    def label_values(self) -> dict[str, str]:
        """Who runs the containers of this attempt and until when (:func:`containers.job_labels`)."""
        node = self.evaluation.worker.rpartition(":")[0] or self.evaluation.worker
        deadline = time.time() + self.time_limit + 2 * STOP_GRACE_SECONDS
        return containers.job_labels(node, self.evaluation.pk, self.evaluation.attempts, deadline)

    def container_labels(self, labels: dict[str, str] | None = None) -> list[str]:
        """Who runs the container and for which attempt: the reaper and a restarted dispatcher find and
        remove the containers nobody watches any more (:mod:`leaderboard.worker.containers`); the
        engine stops one within the worker's own grace period."""
        from evaluator import container

        return [*container.label_args(labels or self.label_values()), "--stop-timeout", str(STOP_GRACE_SECONDS)]

    def remove_container(self) -> None:
        """A container outlives a killed ``docker run`` client: stop and remove it explicitly."""
        if self.container_name:
            subprocess.run([settings.CONTAINER_ENGINE, "rm", "--force", self.container_name], capture_output=True)

    def start(self) -> None:
        if self.standby is not None:
            if self.standby.begin(self.data_path, self.dir / "bundle"):
                self.process, self.started = self.standby.process, time.monotonic()
                return
            log.warning("evaluation %s: the evaluator on standby had ended; starting one", self.evaluation.pk)
            self.standby = None
        command = self.command()
        if not self.heartbeat():  # building the command may start the OCR-fill container first
            raise ClaimLost
        with open(self.log_path, "wb") as log_file:
            self.process = subprocess.Popen(
                command, cwd=settings.BASE_DIR, stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent,
                env=self.environment(),
            )
        self.started = time.monotonic()

    def environment(self) -> dict[str, str]:
        """The score command's environment (:func:`job_environment`), with the judge's key for an official job."""
        env = job_environment(self.dir)
        if self.official:  # for the judge relay, outside the sandbox: the job's own environment never has it
            env.update(official.launcher_key())
        return env

    def watch(self) -> Outcome:
        """Save results as they appear, beat the heart, enforce the limit, notice a lost claim."""
        limit = self.time_limit
        next_beat = 0.0
        while True:
            self.collect()
            now = time.monotonic()
            if now >= next_beat:
                if not self.heartbeat():
                    self.stop()
                    return Outcome("lost")
                next_beat = now + settings.CLAIM_HEARTBEAT_SECONDS
            returncode = self.process.poll()
            if returncode is not None:
                self.collect()
                return self.outcome(returncode)
            if now - self.started > limit + STOP_GRACE_SECONDS:
                self.stop()
                return Outcome.failed(Kind.TIME_LIMIT, time_limit_reason(limit))
            time.sleep(POLL_SECONDS)

    def heartbeat(self) -> bool:
        """False once the claim is gone. A database locked past its timeout (a long write elsewhere)
        skips this beat: the reaper's staleness limit is many beats long."""
        try:
            return EVALUATIONS.beat(self.evaluation.pk, self.token, tasks_done=len(self.saved))
        except OperationalError as exc:
            log.warning("evaluation %s: heartbeat skipped (%s)", self.evaluation.pk, exc)
            return True

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
        if self.standby is not None and self.process is None:  # taken, never given its job
            self.standby.end()
        if self.process is not None and self.process.poll() is None:
            self.stop()
        self.remove_container()
        containers.remove_job_folder(self.dir)
        try:
            self.dir.parent.rmdir()  # the evaluation's folder, once no attempt is left in it
        except OSError:
            pass

    # -- results

    def collect(self) -> None:
        """Save the result of every task the evaluator reported finished since the last look; a
        result that breaks a rule raises :class:`OutputError` (the job wrote it, nothing is trusted)."""
        for key in self.new_progress_keys():
            if key in self.tasks and key not in self.saved:
                path = self.out_dir / "tasks" / key / "result.json"
                if not path.exists() and not path.is_symlink():
                    continue
                result = read_task_result(path, self.tasks[key])
                save_task_result(self.evaluation, self.tasks[key], result)
                self.saved.add(key)

    def new_progress_keys(self) -> list[str]:
        # Bounded reads: a line still being written waits for the next look.
        lines, self.progress_offset = read_appended(self.out_dir / "progress.jsonl", self.progress_offset)
        keys = []
        for line in lines:
            try:
                keys.append(str(json.loads(line)["task"]))
            except (ValueError, KeyError, TypeError):
                continue
        return keys

    def outcome(self, returncode: int) -> Outcome:
        if returncode != 0:  # charged unless the infrastructure stopped it (leaderboard/heldout.py)
            from evaluator.cli import JUDGE_UNUSABLE_EXIT
            from evaluator.container import TIMED_OUT_STATUS
            from evaluator.outputs import strip_server_paths

            if self.official and returncode == JUDGE_UNUSABLE_EXIT:  # this server's judge, not the pages
                said = strip_server_paths(self.log_tail(shown=True))[:300]
                return Outcome.failed(Kind.INFRASTRUCTURE, f"The judge could not be used, nothing was scored: {said} "
                                      "A maintainer has to fix the judge's settings and retry. Not charged.")

            if self.container_name and returncode == TIMED_OUT_STATUS:  # the container's own wall clock
                return Outcome.failed(Kind.TIME_LIMIT, time_limit_reason(self.time_limit))
            oom = bool(self.container_name) and self.container_oom_killed()
            return Outcome(*failed_run(returncode, self.log_tail(), oom, self.log_tail(shown=True)))
        path = self.out_dir / "results.json"
        if not path.exists() and not path.is_symlink():
            return Outcome.failed(Kind.EVALUATOR, "The evaluator finished without writing its results. "
                                                  "A maintainer has the log. Not charged to your quota.")
        try:  # the summary stored is the one recomputed from the checked per-task scores
            document = read_results(path, self.tasks.values())
            self.keep_artifacts(document)
        except OutputError as exc:
            return Outcome(*rejected_output(exc.rule, str(exc)))
        problem = official.judge_problem(document, self.evaluation) if self.official else ""
        if problem:  # an incomplete official run is never published (nor charged: it is the judge's doing)
            # What the judge was asked still cost money: its counters stay on the evaluation for the admin.
            Evaluation.objects.filter(pk=self.evaluation.pk).update(judge_record=official.judge_counters(document))
            return Outcome.failed(Kind.EVALUATOR, problem)
        return Outcome("scored", results=document)

    def keep_artifacts(self, document: dict) -> None:
        """Copy only allowed files of out/ to checked/, with the checked results.json in it."""
        copy_artifacts(self.out_dir, self.checked_dir, skip=("results.json",))
        (self.checked_dir / "results.json").write_text(json.dumps(document), encoding="utf-8")

    def container_oom_killed(self) -> bool:
        from evaluator import container

        state = container.inspect_state(self.container_name, settings.CONTAINER_ENGINE) or {}
        return bool(state.get("OOMKilled"))

    def log_text(self) -> str:
        try:
            text, _cut = read_log_tail(self.log_path, LOG_LIMIT_CHARS)
        except OutputError as exc:
            return f"(the log was not read: {exc})"
        return text

    def log_tail(self, shown: bool = False) -> str:
        """The log's last line; ``shown``: the last one a failure reason may quote. Everyone who may open
        the submission reads that reason (the owner gets it by mail): of a held-out job, a line naming no task."""
        text = self.scrubbed_log()
        if shown and any(task.split == Split.TEST for task in self.tasks.values()):
            text = job_level_log(text, self.tasks)
        lines = [line for line in text.splitlines() if line.strip() and line != TASK_LINES_HIDDEN]
        return lines[-1] if lines else ""

    def scrubbed_log(self) -> str:
        return scrub(self.log_text(), split_secrets(self.tasks.values()))


class ClaimLost(Exception):
    """The claim was taken away while the job was being started."""


def attempt_folder(evaluation_id: int, attempt: int) -> Path:
    """JOBS_ROOT/<evaluation>/attempt-<n>: every claim works in its own folder, so an attempt
    presumed dead that still runs can never delete the work of the attempt that replaced it."""
    return Path(settings.JOBS_ROOT) / str(evaluation_id) / f"attempt-{attempt}"


def remove_ended_attempts() -> int:
    """Remove attempt folders no live claim works in (dead workers' leftovers); returns how many."""
    root = Path(settings.JOBS_ROOT)
    folders = {}
    for path in root.glob("*/attempt-*") if root.is_dir() else []:
        number = path.name.removeprefix("attempt-")
        if path.parent.name.isdigit() and number.isdigit():
            folders[path] = (int(path.parent.name), int(number))
    live = set(Evaluation.objects.filter(pk__in={pk for pk, _ in folders.values()}, status="running")
               .values_list("pk", "attempts"))
    ended = [path for path, key in folders.items() if key not in live]
    for path in ended:
        containers.remove_job_folder(path)
        try:
            path.parent.rmdir()
        except OSError:
            pass
    return len(ended)


def container_limits(wall_clock_s: float | None = None):
    from evaluator.container import ContainerLimits

    limit = settings.EVALUATION_TIME_LIMIT_SECONDS if wall_clock_s is None else wall_clock_s
    return ContainerLimits(memory=settings.EVALUATOR_MEMORY, cpus=settings.EVALUATOR_CPUS,
                           pids=settings.EVALUATOR_PIDS, wall_clock_s=limit)


# --------------------------------------------------------------------------- helpers


def make_read_only(folder: Path) -> None:
    """Nobody writes job inputs; everyone may read them (the sandboxed browser user too)."""
    for path, _dirs, files in os.walk(folder):
        for name in files:
            os.chmod(os.path.join(path, name), 0o444)
        os.chmod(path, 0o555)  # noqa: S103 - read and traverse only, no write bit


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass

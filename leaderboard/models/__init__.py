"""Database models, one module per area.

tasks        task sets and tasks (public inputs apart from private ground truth)
submissions  submissions, their evaluations (one per protocol version) and per-task results
"""

from leaderboard.models.submissions import Evaluation, GenerationJob, Submission, TaskResult
from leaderboard.models.tasks import Task, TaskSet

__all__ = ["Evaluation", "GenerationJob", "Submission", "Task", "TaskResult", "TaskSet"]

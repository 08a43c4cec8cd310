"""Database models, one module per area.

tasks        task sets and tasks (public inputs apart from private ground truth)
submissions  submissions, their evaluations (one per protocol version) and per-task results
board        the generation number every cached leaderboard view is keyed on, and the stored boards
"""

from leaderboard.models.board import BoardGeneration, StoredBoard
from leaderboard.models.submissions import Evaluation, GenerationJob, Submission, TaskResult
from leaderboard.models.tasks import Task, TaskSet

__all__ = [
    "BoardGeneration", "Evaluation", "GenerationJob", "StoredBoard", "Submission", "Task", "TaskResult", "TaskSet",
]

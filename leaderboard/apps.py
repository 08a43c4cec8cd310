from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "IWR-Bench leaderboard"

    def ready(self) -> None:
        # The system checks register themselves, and so do the Celery tasks: messages are sent by
        # task name, and in eager mode (task_always_eager) a task registered here runs right here.
        from leaderboard import checks, storage, tasks  # noqa: F401

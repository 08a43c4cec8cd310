from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "IWR-Bench leaderboard"

    def ready(self) -> None:
        from leaderboard import checks  # noqa: F401 - registers the system checks

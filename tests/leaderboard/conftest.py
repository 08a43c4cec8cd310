from tests.leaderboard.base import collaborator, outsider, owner, staff  # noqa: F401 - fixtures

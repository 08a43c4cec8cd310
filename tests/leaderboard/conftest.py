from tests.leaderboard.base import collaborator, fresh_cache, outsider, owner, staff  # noqa: F401 - fixtures

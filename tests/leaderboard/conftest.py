import os

from tests.leaderboard.base import collaborator, fresh_cache, outsider, owner, staff  # noqa: F401 - fixtures

# The site's tests call the fake model endpoint over plain http on 127.0.0.1 with an API key:
# the development permission for that (the evaluator refuses it otherwise), for this process and
# the workers it starts.
os.environ.setdefault("IWR_GENERATION_ALLOW_PLAIN_HTTP", "1")

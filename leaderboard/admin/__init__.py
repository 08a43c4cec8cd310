"""Admin site registrations, one module per area."""

from leaderboard.admin import submissions, tasks  # noqa: F401 - registers ModelAdmins

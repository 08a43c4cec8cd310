"""REST API v1, one module per area; routes in leaderboard/api/urls.py."""

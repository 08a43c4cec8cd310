"""The IWR-Bench leaderboard: Django project and app in one package."""

from leaderboard.celery import app as celery_app

__all__ = ["celery_app"]

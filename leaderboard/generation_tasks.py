"""Celery tasks of the generate queue: pages generated from a model endpoint a user submitted."""

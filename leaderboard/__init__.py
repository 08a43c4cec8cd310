"""The IWR-Bench leaderboard: Django project and app in one package.

Its modules form one-way layers; each imports only from its own layer or below
(tests/leaderboard/test_layers.py holds every module to this, imports inside functions too):

  4 adapters     tasks.py (every Celery task), views/, api/, admin/, management/, urls, settings, apps
  3 worker       worker/: claims (claim, heartbeat, requeue-or-fail, reaper), evaluator_run, scoring, generating
  2 intake       intake/: bundles (and the dry-run check), endpoints (forms, accepting), entries (owners
                 editing their entries), evaluations (cancel, rescore), status, dispatch
  1 rules, reads access (who sees what, get-or-404 helpers), quotas, tasksets, ranking/, exports, charts,
                 notifications, previews, board_pages (everything cached about a leaderboard page)
  0 foundations  models/, env, cache (generation, cache keys), crypto, secrecy, checks, health, celery (the app)
"""

from leaderboard.celery import app as celery_app

__all__ = ["celery_app"]

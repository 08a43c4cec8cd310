"""Celery application: reads its configuration from Django settings (``CELERY_*``).

It knows no task itself: the workers discover ``leaderboard/tasks.py`` (every task of the
site), and the site sends messages by task name (:mod:`leaderboard.intake.dispatch`).
"""

import os
from urllib.parse import unquote, urlsplit

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

app = Celery("leaderboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["leaderboard"])
# Mail handed to a worker so no request or scoring job waits for SMTP (leaderboard/mail.py).
app.conf.include = ["leaderboard.mail"]


@app.on_after_configure.connect
def _make_broker_folders(sender, **kwargs):
    """The embedded filesystem transport and result store need their folders before the first message."""
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            os.makedirs(options[key], exist_ok=True)
    backend = sender.conf.result_backend or ""
    if backend.startswith("file://"):
        os.makedirs(unquote(urlsplit(backend).path), exist_ok=True)

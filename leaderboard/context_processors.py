"""Values every page template can use."""

from django.conf import settings

import evaluator


def site(request):
    # The held-out rule's smallest category (leaderboard/heldout.py), stated where categories are shown.
    return {"evaluator_version": evaluator.__version__,
            "heldout_min_category_tasks": settings.HELDOUT_MIN_CATEGORY_TASKS}

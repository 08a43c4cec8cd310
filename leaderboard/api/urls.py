"""Routes of ``/api/v1/``. Each area registers its viewsets on the router here."""


from django.urls import path
from rest_framework.routers import DefaultRouter

from leaderboard.api import generation as generation_api
from leaderboard.api import leaderboard as leaderboard_api
from leaderboard.api import submissions as submission_api
from leaderboard.api import tasks as task_api

router = DefaultRouter()
router.register("tasks", task_api.TaskViewSet, basename="api-task")
router.register("leaderboard", leaderboard_api.LeaderboardViewSet, basename="api-leaderboard")
router.register("submissions", submission_api.SubmissionViewSet, basename="api-submission")
router.register("quota", submission_api.QuotaViewSet, basename="api-quota")
router.register("endpoint-submissions", generation_api.EndpointSubmissionViewSet,
                basename="api-endpoint-submission")

urlpatterns = [
    path("bundles/check/", submission_api.BundleCheckView.as_view(), name="api-bundle-check"),
    *router.urls,
]

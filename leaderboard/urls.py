"""URL map of the leaderboard site."""

from allauth.account import views as allauth_views
from django.contrib import admin
from django.urls import include, path

from leaderboard.accounts import verified_email_required
from leaderboard.throttles import throttled
from leaderboard.views import accounts, agreement, api_docs, previews, rankings, replays, site
from leaderboard.views import generation as generation_views
from leaderboard.views import submissions as submission_views
from leaderboard.views import tasks as task_views

urlpatterns = [
    # Leaderboard (home), per-category breakdowns, exports and chart data.
    path("", rankings.home, name="home"),
    path("leaderboard/categories/", rankings.categories, name="leaderboard-categories"),
    path("leaderboard/export/", throttled("exports")(rankings.export), name="leaderboard-export"),
    path("leaderboard/export/tasks/", throttled("exports")(rankings.matrix_export), name="leaderboard-matrix"),
    path("models/<path:name>/", rankings.model_page, name="model-page"),
    path("leaderboard/charts/scores.json", throttled("charts")(rankings.chart_scores), name="leaderboard-chart-scores"),
    path("leaderboard/charts/categories.json", throttled("charts")(rankings.chart_categories),
         name="leaderboard-chart-categories"),
    # An evaluation's results, per-task replays (access-checked files) and comparisons.
    path("results/<int:evaluation_id>/", replays.evaluation_results, name="evaluation-results"),
    path("results/<int:evaluation_id>/categories.json", throttled("charts")(replays.evaluation_categories),
         name="evaluation-categories"),
    path("results/<int:evaluation_id>/agreement/", agreement.evaluation_agreement, name="evaluation-agreement"),
    path("leaderboard/agreement/", agreement.protocol_agreement, name="leaderboard-agreement"),
    path("results/<int:evaluation_id>/tasks/<str:key>/", replays.replay, name="replay"),
    path("results/<int:evaluation_id>/tasks/<str:key>/files/<str:name>", replays.replay_file, name="replay-file"),
    # Live preview of a submitted page: signed links, sandboxed by CSP wherever they are opened.
    path("preview/<str:token>/", previews.preview, name="preview"),
    path("preview/<str:token>/<path:path>", previews.preview, name="preview-file"),
    path("compare/", replays.compare_form, name="compare-form"),
    path("compare/<int:a>/<int:b>/", replays.compare, name="compare"),
    path("compare/<int:a>/<int:b>/tasks/<str:key>/", replays.compare_replay, name="compare-replay"),
    # API documentation and schema (no CDN).
    path("api/docs/", api_docs.api_docs, name="api-docs"),
    path("api/schema/", api_docs.schema_view, name="api-schema"),
    path("api/docs/swagger/", api_docs.swagger_view, name="api-swagger"),
    path("about/", site.about, name="about"),
    path("client/iwr-submit.py", site.client_download, name="client-download"),
    path("healthz", site.healthz, name="healthz"),
    # Accounts (django-allauth): the old names of login, logout and sign-up point at its views.
    path("accounts/login/", allauth_views.login, name="login"),
    path("accounts/logout/", allauth_views.logout, name="logout"),
    path("accounts/signup/", allauth_views.signup, name="signup"),
    path("accounts/", include("allauth.urls")),
    path("account/", accounts.account, name="account"),
    path("account/token/", accounts.regenerate_token, name="regenerate-token"),
    # Task pages (public inputs; dev-split ground truth) and their downloads.
    path("tasks/", task_views.task_list, name="task-index"),
    path("tasks/<slug:set_slug>/inputs-<str:split>.zip", task_views.split_inputs_zip, name="task-split-zip"),
    path("tasks/<slug:set_slug>/<str:key>/", task_views.task_detail, name="task-page"),
    path("tasks/<slug:set_slug>/<str:key>/inputs.zip", task_views.task_inputs_zip, name="task-zip"),
    path("tasks/<slug:set_slug>/<str:key>/files/<path:path>", task_views.task_file, name="task-file"),
    # Submitting and following submissions.
    path("submit/", verified_email_required(submission_views.submit), name="submit"),
    path("submissions/", submission_views.submission_list, name="submission-list"),
    path("submissions/<int:pk>/", submission_views.submission_detail, name="submission-detail"),
    path("submissions/<int:pk>/progress.json", submission_views.submission_progress, name="submission-progress"),
    path("submissions/<int:pk>/cancel/", submission_views.submission_cancel, name="submission-cancel"),
    path("submissions/<int:pk>/edit/", submission_views.submission_edit, name="submission-edit"),
    path("submissions/<int:pk>/results.json", submission_views.submission_results, name="submission-results"),
    # Model-endpoint submissions: the platform generates the pages, then scores them.
    path("submit/endpoint/", verified_email_required(generation_views.submit_endpoint), name="submit-endpoint"),
    path("submissions/<int:pk>/generation/", generation_views.generation_status, name="generation-status"),
    path("submissions/<int:pk>/generation/bundle.zip", generation_views.generated_bundle,
         name="generation-bundle"),
    path("api/v1/", include("leaderboard.api.urls")),
    path("admin/", admin.site.urls),
]

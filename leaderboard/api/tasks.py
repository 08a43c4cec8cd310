"""``/api/v1/tasks/``: published tasks with their public inputs (never ground truth).

Filters (query parameters): ``set``, ``split``, ``interaction``, ``visual``, ``domain``; a value no
published task has is a 400 listing the known ones. Paged like every list (``offset``, ``limit``).
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from leaderboard import tasksets
from leaderboard.api.pagination import Pages
from leaderboard.models import Task


class TaskSerializer(serializers.ModelSerializer):
    task_set = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    categories = serializers.SerializerMethodField()
    resolution = serializers.CharField(read_only=True)
    page = serializers.SerializerMethodField()
    inputs_zip = serializers.SerializerMethodField()
    video = serializers.SerializerMethodField()
    stitched_assets = serializers.SerializerMethodField()
    assets = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = [
            "id", "task_set", "key", "split", "categories", "resolution", "width", "height", "n_actions",
            "page", "inputs_zip", "video", "stitched_assets", "assets",
        ]

    def get_categories(self, task: Task) -> dict[str, str]:
        return {
            "interaction_complexity": task.interaction_complexity,
            "visual_complexity": task.visual_complexity,
            "domain": task.domain,
            "sub_domain": task.sub_domain,
        }

    def _url(self, name: str, *args) -> str:
        request = self.context.get("request")
        url = reverse(name, args=args)
        return request.build_absolute_uri(url) if request else url

    def _files(self, task: Task) -> tasksets.PublicFiles:
        # One directory listing per task per response, shared by the three file fields.
        cache = self.context.setdefault("_public_files", {})
        if task.pk not in cache:
            cache[task.pk] = tasksets.public_files(task)
        return cache[task.pk]

    def _file_url(self, task: Task, path: str) -> str:
        return self._url("task-file", task.task_set.slug, task.key, path)

    def get_page(self, task: Task) -> str:
        return self._url("task-page", task.task_set.slug, task.key)

    def get_inputs_zip(self, task: Task) -> str:
        return self._url("task-zip", task.task_set.slug, task.key)

    def get_video(self, task: Task) -> str | None:
        video = self._files(task).video
        return self._file_url(task, video) if video else None

    def get_stitched_assets(self, task: Task) -> list[str]:
        return [self._file_url(task, path) for path in self._files(task).stitched]

    def get_assets(self, task: Task) -> list[str]:
        return [self._file_url(task, path) for path in self._files(task).assets]


FILTER_HELP = {
    "set": "Task set slug.", "split": "Split: dev (public ground truth) or test (held out).",
    "interaction": "Interaction complexity (e.g. L1).", "visual": "Visual complexity (e.g. L2).",
    "domain": "Domain (e.g. Education).",
}
FILTER_PARAMETERS = [OpenApiParameter(name, str, OpenApiParameter.QUERY, description=FILTER_HELP[name]
                                      + " An unknown value is a 400.") for name in tasksets.FILTERS]


@extend_schema_view(list=extend_schema(parameters=FILTER_PARAMETERS))
class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    """Published tasks and links to their public inputs."""

    serializer_class = TaskSerializer
    permission_classes = [AllowAny]
    throttle_classes = [AnonRateThrottle, UserRateThrottle]  # rates: IWR_API_ANON_RATE / IWR_API_USER_RATE
    pagination_class = Pages

    def get_queryset(self):
        if self.action != "list":
            return tasksets.public_tasks()
        params = self.request.query_params
        problems = tasksets.filter_problems(tasksets.public_tasks(), params)
        if problems:
            raise ValidationError({"detail": "; ".join(problems)})
        queryset, _chosen = tasksets.filter_tasks(tasksets.public_tasks(), params)
        return queryset

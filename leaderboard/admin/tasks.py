"""Admin for task sets and tasks (curation).

Tasks come from ``manage.py import_tasks`` (or re-authoring), never from the add form:
their columns are derived from the record and files, so only the status is edited here.
The change page doubles as the staff task view: video, checkpoints, action sequence.
Task files are served to staff through :meth:`TaskAdmin.file_view` only.
"""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from leaderboard import access, ranking, tasksets
from leaderboard.models import Task, TaskSet
from leaderboard.models.tasks import Split
from leaderboard.views.tasks import file_response


@admin.register(TaskSet)
class TaskSetAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "dev_tasks", "test_tasks", "created_at")
    search_fields = ("name", "slug")
    readonly_fields = ("slug", "created_at")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            n_dev=Count("tasks", filter=Q(tasks__split=Split.DEV)),
            n_test=Count("tasks", filter=Q(tasks__split=Split.TEST)),
        )

    def has_add_permission(self, request):
        return False  # task sets are created by import_tasks

    @admin.display(description="dev tasks", ordering="n_dev")
    def dev_tasks(self, obj):
        return obj.n_dev

    @admin.display(description="test tasks", ordering="n_test")
    def test_tasks(self, obj):
        return obj.n_test


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = (
        "key", "task_set", "split", "status", "interaction_complexity", "visual_complexity", "domain",
        "resolution", "n_actions", "has_script", "updated_at",
    )
    list_display_links = ("key",)
    list_filter = ("split", "status", "interaction_complexity", "visual_complexity", "domain", "task_set")
    search_fields = ("key", "domain", "sub_domain")
    list_select_related = ("task_set",)
    actions = ["publish", "retire", "move_to_dev", "move_to_test", "reauthor"]
    change_form_template = "leaderboard/tasks/admin_change_form.html"
    fieldsets = (
        (None, {"fields": ("status", "task_set", "key", "split")}),
        ("Public inputs", {"fields": (
            "interaction_complexity", "visual_complexity", "domain", "sub_domain", "width", "height", "n_actions",
        )}),
        ("Ground truth and storage", {"classes": ("collapse",), "fields": (
            "record_json", "script_json", "files_dir", "record_hash", "imported_at", "updated_at",
        )}),
    )
    readonly_fields = (
        "task_set", "key", "split", "interaction_complexity", "visual_complexity", "domain", "sub_domain", "width",
        "height", "n_actions", "record_json", "script_json", "files_dir", "record_hash", "imported_at", "updated_at",
    )

    def has_add_permission(self, request):
        return False  # tasks are imported, not typed in

    @admin.display(boolean=True, description="script")
    def has_script(self, obj):
        return bool(obj.script)

    @admin.display(description="resolution")
    def resolution(self, obj):
        return obj.resolution

    @admin.display(description="record (ground truth)")
    def record_json(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.record, indent=2, ensure_ascii=False))

    @admin.display(description="authoring script")
    def script_json(self, obj):
        if not obj.script:
            return "none (imported without a script)"
        return format_html("<pre>{}</pre>", json.dumps(obj.script, indent=2, ensure_ascii=False))

    # ---- the staff task view and its files

    def get_urls(self):
        route = path("<path:object_id>/files/<path:relative>", self.admin_site.admin_view(self.file_view),
                     name="leaderboard_task_file")
        return [route, *super().get_urls()]

    def file_view(self, request, object_id, relative):
        task = get_object_or_404(Task, pk=object_id)
        if not (access.is_staff(request.user) and self.has_view_permission(request, task)):
            raise Http404("No such file.")
        file_path = tasksets.staff_file_path(task, relative)
        if file_path is None:
            raise Http404("No such file.")
        return file_response(request, file_path, public=False)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        task = self.get_object(request, object_id)
        extra = dict(extra_context or {})
        if task is not None:
            extra.update(self._preview_context(task))
        return super().change_view(request, object_id, form_url, extra)

    def _preview_context(self, task: Task) -> dict:
        files = tasksets.staff_files(task)

        def url(relative: str) -> str:
            return reverse("admin:leaderboard_task_file", args=[task.pk, relative])

        return {
            "task_video_url": url(files.video) if files.video else None,
            "task_checkpoints": [
                (f"{caption} · {name.split('/')[-1]}", url(name))
                for name, caption in tasksets.checkpoint_captions(task, files.checkpoints)
            ],
            "task_stitched": [(name.split("/")[-1], url(name)) for name in files.stitched],
            "task_actions": tasksets.action_rows(task),
            "task_public_url": reverse("task-page", args=[task.task_set.slug, task.key]),
            "task_is_published": task.status == Task.Status.PUBLISHED,
        }

    # ---- deletion removes the stored files too

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        tasksets.delete_task_files(obj)

    def delete_queryset(self, request, queryset):
        tasks = list(queryset)
        super().delete_queryset(request, queryset)
        for task in tasks:
            tasksets.delete_task_files(task)

    # ---- actions

    @admin.action(description="Publish selected tasks", permissions=["change"])
    def publish(self, request, queryset):
        splits = self._splits(queryset)
        count = queryset.update(status=Task.Status.PUBLISHED)
        self._boards_changed(splits)
        self.message_user(request, f"{count} task(s) published.", messages.SUCCESS)

    @admin.action(description="Retire selected tasks", permissions=["change"])
    def retire(self, request, queryset):
        splits = self._splits(queryset)
        count = queryset.update(status=Task.Status.RETIRED)
        self._boards_changed(splits)
        self.message_user(request, f"{count} task(s) retired: they leave the public pages.", messages.SUCCESS)

    @admin.action(description="Move selected tasks to the dev split (makes their ground truth public)",
                  permissions=["change"])
    def move_to_dev(self, request, queryset):
        held_out = queryset.filter(split=Split.TEST).select_related("task_set")
        if held_out.exists() and request.POST.get("confirm") != "yes":
            return self._confirm_move_to_dev(request, queryset, held_out)
        self._move(request, queryset, Split.DEV)

    @admin.action(description="Move selected tasks to the test split", permissions=["change"])
    def move_to_test(self, request, queryset):
        self._move(request, queryset, Split.TEST)

    def _confirm_move_to_dev(self, request, queryset, held_out):
        context = {
            **self.admin_site.each_context(request),
            "title": "Make ground truth public?",
            "opts": self.model._meta,
            "held_out": held_out,
            "selected": queryset.values_list("pk", flat=True),
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "leaderboard/tasks/admin_confirm_move.html", context)

    def _move(self, request, queryset, split: str) -> None:
        moved, splits = 0, self._splits(queryset) | {split}
        for task in queryset.select_related("task_set"):
            try:
                moved += tasksets.move_task(task, split)
            except tasksets.TaskImportError as exc:
                self.message_user(request, f"{task}: {exc.problems[0]}", messages.ERROR)
        self._boards_changed(splits)
        self.message_user(request, f"{moved} task(s) moved to {split}.", messages.SUCCESS)

    @staticmethod
    def _splits(queryset) -> set[str]:
        return set(queryset.order_by().values_list("split", flat=True).distinct())

    @staticmethod
    def _boards_changed(splits: set[str]) -> None:
        """The tasks a split is scored on changed: rank its boards again, stale every cached view."""
        for split in sorted(splits):
            ranking.boards_changed(split=split)

    @admin.action(description="Re-author selected tasks from their scripts", permissions=["change"])
    def reauthor(self, request, queryset):
        for task in queryset.select_related("task_set"):
            try:
                summary = tasksets.reauthor_task(task)
            except tasksets.TaskImportError as exc:
                self.message_user(request, f"{task}: {'; '.join(exc.problems)}", messages.ERROR)
                continue
            outcome = "updated" if summary.updated else "unchanged (the recording is identical)"
            self.message_user(request, f"{task}: re-authored, {outcome}.", messages.SUCCESS)

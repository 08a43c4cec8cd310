"""Admin for submissions and evaluations: verify, flag with a public reason, rescore.

Rescoring adds an evaluation under the current version of each submission's protocol,
queued behind users' submissions; earlier evaluations keep their scores, protocol and
version. To rescore a whole split, filter the list by split, select all, run the action.
Every verdict change (and every edit or deletion) ranks the boards it touches again and moves the
leaderboard cache generation on (:func:`leaderboard.ranking.boards_changed`).
"""

from __future__ import annotations

from functools import partial

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import transaction
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join

from leaderboard import official, ranking
from leaderboard.intake import dispatch, evaluations
from leaderboard.intake import official as official_intake
from leaderboard.models import Evaluation, Submission, TaskResult


class FlagForm(forms.Form):
    reason = forms.CharField(max_length=300, help_text="Shown publicly next to the entry, e.g. "
                                                       "'pages copy the reference site's HTML'.")


class EvaluationInline(admin.TabularInline):
    model = Evaluation
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ("protocol", "judge_model", "grounding_model", "status", "failure_kind", "final", "ifs", "vfs",
              "attempts", "created_at", "finished_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "model_name", "owner", "split", "kind", "protocol", "status", "public", "verified",
                    "flagged", "charged", "created_at")
    list_filter = ("split", "kind", "protocol", "verified", "flagged", "public")
    search_fields = ("model_name", "organisation", "owner__username", "owner__email")
    readonly_fields = ("bundle_size", "bundle_sha256", "created_at")
    inlines = [EvaluationInline]
    actions = ["mark_verified", "clear_verified", "flag", "clear_flag", "rescore", "score_official"]

    @admin.display(description="status")
    def status(self, obj: Submission) -> str:
        evaluation = obj.primary_evaluation
        return evaluation.status if evaluation else "-"

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        # The admin saves in a transaction: readers must see the change first. Any field may have
        # changed (the split too), so every board is ranked again.
        transaction.on_commit(ranking.boards_changed)

    def delete_model(self, request, obj):
        pairs = ranking.pairs_of_submissions([obj.pk])
        super().delete_model(request, obj)
        transaction.on_commit(partial(ranking.boards_changed, pairs))

    def delete_queryset(self, request, queryset):
        pairs = ranking.pairs_of_submissions(queryset.values_list("pk", flat=True))
        super().delete_queryset(request, queryset)
        transaction.on_commit(partial(ranking.boards_changed, pairs))

    @admin.action(description="Mark as verified", permissions=["change"])
    def mark_verified(self, request, queryset):
        self._verdict(request, queryset, queryset.update(verified=True), "verified")

    @admin.action(description="Remove the verified mark", permissions=["change"])
    def clear_verified(self, request, queryset):
        self._verdict(request, queryset, queryset.update(verified=False), "no longer verified")

    @admin.action(description="Flag (leaves the ranking; the reason is public)", permissions=["change"])
    def flag(self, request, queryset):
        form = FlagForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            count = queryset.update(flagged=True, flag_reason=form.cleaned_data["reason"])
            self._verdict(request, queryset, count, "flagged")
            return None
        context = {**self.admin_site.each_context(request), "title": "Flag submissions", "form": form,
                   "queryset": queryset, "opts": self.model._meta,
                   "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME}
        return TemplateResponse(request, "leaderboard/submissions/admin_flag.html", context)

    @admin.action(description="Remove the flag", permissions=["change"])
    def clear_flag(self, request, queryset):
        self._verdict(request, queryset, queryset.update(flagged=False, flag_reason=""), "unflagged")

    @admin.action(description="Rescore under the current protocol version (queued behind users)",
                  permissions=["change"])
    def rescore(self, request, queryset):
        queued = [evaluation for evaluation in map(evaluations.queue_rescore, queryset) if evaluation]
        skipped = queryset.count() - len(queued)
        self.message_user(request, f"{len(queued)} rescore(s) queued; {skipped} skipped (no bundle, or already "
                                   "evaluated under the current version).", messages.SUCCESS)

    @admin.action(description="Score with the paper's judge (iwr-official; costs money, asks first)",
                  permissions=["change"])
    def score_official(self, request, queryset):
        """A confirmation page with the count and every refusal; queued only once it is confirmed."""
        if "apply" in request.POST:
            queued, plan = official_intake.queue_official(queryset)
            self.message_user(request, f"{len(queued)} official evaluation(s) queued.", messages.SUCCESS)
            for reason, refused in plan.refused.items():
                self.message_user(request, f"{len(refused)} refused: {reason}", messages.WARNING)
            return None
        context = {**self.admin_site.each_context(request), "title": "Score with the paper's judge",
                   "queryset": list(queryset), "plan": official_intake.plan(queryset), "opts": self.model._meta,
                   "unavailable": official.unavailable_reason(), "judge": official.judge_settings(),
                   "host": official.judge_host(), "requests_per_task": official.REQUESTS_PER_TASK,
                   "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME}
        return TemplateResponse(request, "leaderboard/submissions/admin_official.html", context)

    def _verdict(self, request, queryset, count: int, what: str) -> None:
        ranking.boards_changed(ranking.pairs_of_submissions(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{count} submission(s) {what}.", messages.SUCCESS)


class TaskResultInline(admin.TabularInline):
    model = TaskResult
    extra = 0
    can_delete = False
    fields = ("task", "final", "ifs", "vfs", "steps_passed", "steps_total", "error")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = ("id", "submission", "protocol", "judge_model", "status", "failure_kind", "is_rescore", "attempts",
                    "tasks_done", "tasks_total", "final", "worker", "created_at", "finished_at")
    list_filter = ("status", "failure_kind", "protocol", "judge_model", "is_rescore")
    search_fields = ("submission__model_name", "worker")
    readonly_fields = [field.name for field in Evaluation._meta.fields if field.name != "judge_record"] + ["judge"]
    inlines = [TaskResultInline]
    actions = ["retry"]

    @admin.display(description="judge record")
    def judge(self, obj: Evaluation) -> str:
        """iwr-official: what the judge was asked and what it cost (the relay's counters), as a table."""
        record = obj.judge_record or {}
        if not record:
            return "-"
        rows = []
        for name, value in record.items():
            if isinstance(value, dict):
                value = ", ".join(f"{key}: {item}" for key, item in value.items()) or "-"
            elif isinstance(value, list):
                value = ", ".join(map(str, value)) or "none"
            rows.append((name.replace("_", " "), value))
        return format_html("<table>{}</table>", format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", rows))

    def has_add_permission(self, request) -> bool:
        return False

    @admin.action(description="Retry (failed or cancelled evaluations: queue again)", permissions=["change"])
    def retry(self, request, queryset):
        ids = list(queryset.filter(status__in=[Evaluation.Status.FAILED, Evaluation.Status.CANCELLED])
                   .values_list("pk", flat=True))
        Evaluation.objects.filter(pk__in=ids).update(status=Evaluation.Status.QUEUED, attempts=0, failure_kind="",
                                                     failure_reason="", finished_at=None)
        for evaluation_id in ids:
            dispatch.evaluation(evaluation_id)
        self.message_user(request, f"{len(ids)} evaluation(s) queued again.", messages.SUCCESS)

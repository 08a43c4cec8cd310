"""The researcher's API: optional protocol, 429 with Retry-After, 400 for unknown filter values, one
paginator with absolute links, the bundle check, per-task results, owners editing their entries, and
an OpenAPI schema that validates."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import pytest
from django.contrib.admin.models import LogEntry
from django.core.cache import cache
from django.utils import timezone

from leaderboard import quotas
from leaderboard.cache import bump_generation, get_generation
from leaderboard.models import Submission, TaskResult
from tests.leaderboard.base import logged_in, make_user
from tests.leaderboard.factories import make_entry, make_submission, make_tasks
from tests.leaderboard.test_submit import PAGE, api_client, fields, upload, zip_bytes

pytest_plugins = ["tests.leaderboard.datasets"]
pytestmark = pytest.mark.django_db
BOARD = "/api/v1/leaderboard/"


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()


@pytest.fixture
def sent(monkeypatch):
    from leaderboard.intake import dispatch

    calls = []
    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: calls.append(evaluation_id) or True)
    return calls


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def bundle(**members):
    return upload(zip_bytes(members or {"101/index.html": PAGE}))


# --------------------------------------------------------------------------- API conventions


def test_protocol_may_be_left_out_and_defaults_to_iwr_det(owner, imported_sample, media, sent):
    data = {key: value for key, value in fields().items() if key != "protocol"}
    response = api_client(owner).post("/api/v1/submissions/", {**data, "bundle": bundle()})
    assert response.status_code == 201, response.content
    assert Submission.objects.get(pk=response.json()["id"]).protocol == "iwr-det"
    wrong = api_client(owner).post("/api/v1/submissions/", {**fields(protocol="nope"), "bundle": bundle()})
    assert wrong.status_code == 400 and "nope" in wrong.json()["protocol"][0]


def test_over_quota_is_a_429_with_retry_after_at_utc_midnight(owner, imported_sample, media, sent, settings):
    settings.SUBMISSION_QUOTAS = {"dev": 1, "test": 1}
    client = api_client(owner)
    assert client.post("/api/v1/submissions/", {**fields(), "bundle": bundle()}).status_code == 201
    refused = client.post("/api/v1/submissions/", {**fields(), "bundle": bundle()})
    assert refused.status_code == 429
    _, midnight = quotas.day_bounds()
    wait = int(refused["Retry-After"])
    assert abs(wait - (midnight - timezone.now()).total_seconds()) < 5 and wait <= 86400
    assert refused.json()["resets_at"] == midnight.isoformat()
    assert "used all 1 submissions" in refused.json()["non_field_errors"][0]
    assert Submission.objects.count() == 1


def test_a_closed_split_is_a_429_without_retry_after(owner, imported_sample, media, settings):
    settings.SUBMISSION_QUOTAS = {"dev": 0, "test": 0}
    refused = api_client(owner).post("/api/v1/submissions/", {**fields(), "bundle": bundle()})
    assert refused.status_code == 429 and "Retry-After" not in refused
    assert "closed" in refused.json()["non_field_errors"][0]


def test_retry_after_counts_to_the_next_reset():
    now = dt.datetime(2026, 3, 4, 23, 59, 30, tzinfo=dt.UTC)
    status = quotas.QuotaStatus("dev", 3, 3, quotas.day_bounds(now)[1])
    assert status.retry_after(now) == 30
    assert quotas.QuotaStatus("dev", 0, 0, status.resets_at).retry_after(now) is None


@pytest.mark.parametrize(("params", "message"), [
    ({"split": "train"}, "split='train' matches no published task"),
    ({"domain": "Cooking"}, "domain='Cooking'"),
    ({"set": "other"}, "set='other'"),
    ({"limit": "0"}, "limit=0 is out of range"),
    ({"offset": "x"}, "offset='x' is not valid"),
])
def test_unknown_task_filter_values_are_a_400(client, imported_sample, params, message):
    response = client.get("/api/v1/tasks/", params)
    assert response.status_code == 400 and message in response.json()["detail"]


@pytest.mark.parametrize("url", ["/api/v1/submissions/", "/api/v1/endpoint-submissions/"])
def test_owner_lists_are_paged_with_absolute_links(owner, url):
    kind = Submission.Kind.ENDPOINT if "endpoint" in url else Submission.Kind.BUNDLE
    for index in range(3):
        submission = make_submission(owner, model_name=f"m{index}", kind=kind)
        if kind == Submission.Kind.ENDPOINT:
            from leaderboard.models import GenerationJob
            GenerationJob.objects.create(submission=submission, base_url="https://api.example.com/v1", model_id="m")
    client = api_client(owner)
    first = client.get(url, {"limit": 2}).json()
    assert first["count"] == 3 and len(first["results"]) == 2 and first["previous"] is None
    assert first["next"].startswith("http://testserver" + url) and "offset=2" in first["next"]
    second = client.get(first["next"]).json()
    assert [row["model_name"] for row in first["results"] + second["results"]] == ["m2", "m1", "m0"]
    assert client.get(url, {"limit": "many"}).status_code == 400


def test_the_tasks_list_pages_too(client, imported_sample):
    page = client.get("/api/v1/tasks/", {"limit": 1, "offset": 1}).json()
    assert page["count"] == 4 and len(page["results"]) == 1
    assert page["previous"].startswith("http://testserver/api/v1/tasks/") and "offset=2" in page["next"]


# --------------------------------------------------------------------------- the bundle check


def test_the_bundle_check_reports_without_spending_quota_or_storing(owner, imported_sample, media, settings, sent):
    settings.SUBMISSION_QUOTAS = {"dev": 1, "test": 1}
    client = api_client(owner)
    members = {"outputs/101/my-model/index.html": PAGE, "outputs/extra/my-model/index.html": PAGE}
    for _ in range(3):  # as often as one likes: no quota spent
        response = client.post("/api/v1/bundles/check/", {"split": "dev", "bundle": bundle(**members)})
        assert response.status_code == 200, response.content
    report = response.json()
    assert report["accepted"] is True and report["pages"] == ["101"] and report["missing"] == ["dev-b"]
    assert report["layout"]["kind"] == "nested" and report["tasks"] == 2
    assert not Submission.objects.exists() and not list(media.rglob("*.zip")) and sent == []
    assert quotas.status(owner, "dev").remaining == 1


def test_a_bad_bundle_is_a_report_and_bad_fields_a_400(owner, imported_sample, media):
    client = api_client(owner)
    refused = client.post("/api/v1/bundles/check/", {"split": "dev", "bundle": upload(b"not a zip")}).json()
    assert refused["accepted"] is False and refused["problems"] and refused["layout"] is None
    wrong = client.post("/api/v1/bundles/check/", {"split": "train", "bundle": bundle()})
    assert wrong.status_code == 400 and "split" in wrong.json()
    assert client.post("/api/v1/bundles/check/", {"split": "dev"}).json()["bundle"]
    from django.test import Client
    assert Client().post("/api/v1/bundles/check/", {"split": "dev", "bundle": bundle()}).status_code in (401, 403)


# --------------------------------------------------------------------------- per-task results


def board_with_tasks(split: str):
    tasks = make_tasks(3, split=split)
    entries = [make_entry(make_user(), split=split, tasks=tasks, finals=finals, model_name=name)
               for name, finals in (("alpha", (0.9, 0.5, 0.7)), ("beta", (0.2, 0.4, 0.0)))]
    make_entry(None, split=split, kind=Submission.Kind.PAPER, model_name="GPT-5",
               protocol="official judge (paper)", final=0.3)
    bump_generation()
    return tasks, entries


def test_per_task_scores_match_the_stored_results(client):
    tasks, entries = board_with_tasks("dev")
    page = client.get(BOARD, {"split": "dev", "per_task": 1}).json()
    assert "per_task=1" in (client.get(BOARD, {"split": "dev", "per_task": 1, "limit": 1}).json()["next"])
    by_id = {entry["evaluation_id"]: entry["tasks"] for entry in page["entries"]}
    for evaluation in entries:
        stored = {r.task.key: (r.ifs, r.vfs, r.final) for r in TaskResult.objects.filter(evaluation=evaluation)}
        shown = {row["task"]: (row["ifs"], row["vfs"], row["final"]) for row in by_id[evaluation.pk]}
        assert shown == stored and len(shown) == 3
    assert "tasks" not in client.get(BOARD, {"split": "dev"}).json()["entries"][0]
    assert client.get(BOARD, {"split": "dev", "per_task": "yes"}).status_code == 400


def test_held_out_per_task_scores_are_left_out_except_for_staff(client, staff):
    board_with_tasks("test")
    public = client.get(BOARD, {"split": "test", "per_task": 1}).json()
    assert public["entries"] and all("tasks" not in entry for entry in public["entries"])
    mine = logged_in(client, staff).get(BOARD, {"split": "test", "per_task": 1}).json()
    assert all(len(entry["tasks"]) == 3 for entry in mine["entries"] if not entry["reported_in_paper"])


def test_the_matrix_export_lists_entries_by_tasks(client, staff):
    tasks, entries = board_with_tasks("dev")
    data = client.get("/leaderboard/export/tasks/", {"split": "dev", "format": "json"}).json()
    assert data["tasks"] == [task.key for task in tasks]
    alpha = next(row for row in data["entries"] if row["model_name"] == "alpha")
    assert alpha["final"] == [0.9, 0.5, 0.7] and alpha["evaluation_id"] == entries[0].pk
    rows = list(csv.reader(io.StringIO(client.get("/leaderboard/export/tasks/", {"split": "dev"}).content.decode())))
    assert rows[0][:5] == ["rank", "evaluation_id", "model", "organisation", "score"] and rows[0][5:] == data["tasks"]
    assert ["alpha", "final", "0.9", "0.5", "0.7"] == [rows[1][2], rows[1][4], *rows[1][5:]]
    page = client.get("/", {"split": "dev"}).content.decode()
    assert "/leaderboard/export/tasks/?" in page
    board_with_tasks("test")
    assert client.get("/leaderboard/export/tasks/", {"split": "test"}).status_code == 403
    assert "/leaderboard/export/tasks/?" not in client.get("/", {"split": "test"}).content.decode()
    assert logged_in(client, staff).get("/leaderboard/export/tasks/", {"split": "test"}).status_code == 200
    assert client.get("/leaderboard/export/tasks/", {"split": "dev", "format": "xls"}).status_code == 400


def test_a_public_dev_entry_has_a_public_results_document(client, owner):
    tasks = make_tasks(2, split="dev")
    evaluation = make_entry(owner, split="dev", tasks=tasks, finals=(0.5, 1.0))
    url = f"/api/v1/submissions/{evaluation.submission_id}/results/"
    document = client.get(url).json()
    assert [row["task"] for row in document["tasks"]] == [t.key for t in tasks] and "charged" not in document
    held_out = make_entry(owner, split="test", tasks=make_tasks(1), finals=(0.5,))
    assert client.get(f"/api/v1/submissions/{held_out.submission_id}/results/").status_code == 404
    assert api_client(owner).get(f"/api/v1/submissions/{held_out.submission_id}/results/").status_code == 200
    Submission.objects.filter(pk=evaluation.submission_id).update(public=False)
    assert client.get(url).status_code == 404


# --------------------------------------------------------------------------- owners edit their entries


def patch(user, pk, body):
    return api_client(user).patch(f"/api/v1/submissions/{pk}/", json.dumps(body), content_type="application/json")


def test_the_owner_edits_an_entry_and_the_change_is_logged(owner, django_capture_on_commit_callbacks):
    entry = make_entry(owner, split="dev", final=0.4, organisation="Old", public=True)
    before = get_generation()
    with django_capture_on_commit_callbacks(execute=True):
        response = patch(owner, entry.submission_id, {"organisation": "New Lab", "paper_url": "arxiv.org/abs/1"})
    assert response.status_code == 200, response.content
    submission = Submission.objects.get(pk=entry.submission_id)
    assert submission.organisation == "New Lab" and submission.paper_url == "https://arxiv.org/abs/1"
    assert sorted(response.json()["changed"]) == ["organisation", "paper_url"] and submission.public
    assert get_generation() > before
    log = LogEntry.objects.get(object_id=str(submission.pk))
    assert log.user == owner and "Organisation" in log.get_change_message()
    entries = client_board_names()
    assert "New Lab" in entries


def client_board_names():
    from django.test import Client
    return [e["organisation"] for e in Client().get(BOARD, {"split": "dev"}).json()["entries"]]


def test_a_description_change_does_not_touch_the_board(owner, django_capture_on_commit_callbacks):
    entry = make_entry(owner, split="dev", final=0.4)
    before = get_generation()
    with django_capture_on_commit_callbacks(execute=True):
        assert patch(owner, entry.submission_id, {"description": "better"}).status_code == 200
    assert get_generation() == before and LogEntry.objects.count() == 1
    assert patch(owner, entry.submission_id, {"description": "better"}).json()["changed"] == []
    assert LogEntry.objects.count() == 1  # nothing changed, nothing logged


def test_edit_errors_are_specific(owner, collaborator, staff):
    entry = make_entry(owner, split="dev", final=0.4)
    bad = patch(owner, entry.submission_id, {"paper_url": "not a url at all", "model_name": "x"}).json()
    assert "model_name cannot be changed" in bad["model_name"][0]
    assert "paper_url" in patch(owner, entry.submission_id, {"paper_url": "ht!tp://"}).json()
    flag = patch(owner, entry.submission_id, {"public": "maybe"}).json()
    assert flag == {"public": ["public='maybe' is not valid: use true or false."]}
    assert Submission.objects.get(pk=entry.submission_id).public
    assert patch(collaborator, entry.submission_id, {"description": "mine"}).status_code == 403
    assert patch(staff, entry.submission_id, {"description": "mine"}).status_code == 403
    Submission.objects.filter(pk=entry.submission_id).update(public=False)
    assert patch(collaborator, entry.submission_id, {"description": "mine"}).status_code == 404


def test_withdrawing_takes_an_entry_off_the_board_for_good(owner, client):
    entry = make_entry(owner, split="dev", final=0.4, model_name="gone")
    bump_generation()
    assert patch(owner, entry.submission_id, {"withdraw": True}).status_code == 200
    submission = Submission.objects.get(pk=entry.submission_id)
    assert submission.withdrawn_at and not submission.public
    assert "gone" not in [e["model_name"] for e in client.get(BOARD, {"split": "dev"}).json()["entries"]]
    again = patch(owner, entry.submission_id, {"public": True})
    assert again.status_code == 400 and "withdrawn" in again.json()["public"][0]


def test_the_submission_page_edits_the_entry(client, owner):
    entry = make_entry(owner, split="dev", final=0.4)
    page = logged_in(client, owner).get(f"/submissions/{entry.submission_id}/").content.decode()
    assert 'name="organisation"' in page and 'name="withdraw"' in page
    response = client.post(f"/submissions/{entry.submission_id}/edit/",
                           {"organisation": "Page Lab", "model_size": "7B", "public": "on"})
    assert response.status_code == 302
    assert Submission.objects.get(pk=entry.submission_id).organisation == "Page Lab"


# --------------------------------------------------------------------------- the schema


def test_the_schema_validates_and_documents_the_filters(client):
    from openapi_spec_validator import validate

    schema = client.get("/api/schema/", {"format": "json"}).json()
    validate(schema)
    tasks = {p["name"] for p in schema["paths"]["/api/v1/tasks/"]["get"]["parameters"]}
    assert {"set", "split", "interaction", "visual", "domain", "offset", "limit"} <= tasks
    board = {p["name"] for p in schema["paths"]["/api/v1/leaderboard/"]["get"]["parameters"]}
    assert {"split", "protocol", "per_task", "q", "offset", "limit"} <= board
    for path in ("/api/v1/submissions/", "/api/v1/endpoint-submissions/", "/api/v1/tasks/"):
        answer = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert answer["$ref"].rsplit("/", 1)[1].startswith("Paginated")  # one paginator on every list
    assert "patch" in schema["paths"]["/api/v1/submissions/{id}/"]
    assert "/api/v1/bundles/check/" in schema["paths"]
    swagger = client.get("/api/docs/swagger/").content.decode()
    assert "/static/drf_spectacular_sidecar/" in swagger and "cdn" not in swagger.lower()


def test_the_submit_page_checks_only(client, owner, imported_sample, media, sent):
    logged_in(client, owner)
    data = {"split": "dev", "check_only": "1", "bundle": bundle()}
    page = client.post("/submit/", data)
    assert page.status_code == 200 and 'id="check-report"' in page.content.decode()
    assert "1 of 2 tasks have a page" in page.content.decode() and "dev-b" in page.content.decode()
    xhr = client.post("/submit/", {**data, "bundle": bundle()}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert xhr.status_code == 200 and "would be accepted" in xhr.json()["form_html"]
    assert not Submission.objects.exists() and sent == []
    assert 'id="check-button"' in client.get("/submit/").content.decode()

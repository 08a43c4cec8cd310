"""Endpoint submissions' request options: default temperature and the length parameter reach the
generator, and the submission page says when the model ran at its default temperature."""

from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token

from leaderboard.models import GenerationJob
from tests.evaluator.fake_endpoint import FakeEndpoint
from tests.leaderboard.base import logged_in
from tests.leaderboard.test_generation import fields, run_job

pytest_plugins = ["tests.leaderboard.datasets", "tests.leaderboard.generation_support"]
pytestmark = pytest.mark.django_db


def api_post(owner, body):
    from django.test import Client

    api = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    return api.post("/api/v1/endpoint-submissions/", json.dumps(body), content_type="application/json")


def test_the_options_go_through_to_every_request(client, owner, imported_sample, endpoint_settings, sent,
                                                 django_capture_on_commit_callbacks):
    body = {**fields("http://x"), "default_temperature": True, "length_parameter": "max_completion_tokens"}
    with FakeEndpoint() as endpoint:
        with django_capture_on_commit_callbacks(execute=True):
            response = api_post(owner, {**body, "base_url": endpoint.base_url})
        assert response.status_code == 201, response.content
        generation = response.json()["generation"]
        assert generation["default_temperature"] is True and generation["length_parameter"] == "max_completion_tokens"
        job = GenerationJob.objects.get()
        assert run_job(job, django_capture_on_commit_callbacks) == "done"
    assert endpoint.requests
    for request in endpoint.requests:
        assert "temperature" not in request.body and "max_tokens" not in request.body
        assert request.body["max_completion_tokens"] == 3000
    assert job.ran_at_default_temperature
    page = logged_in(client, owner).get(f"/submissions/{job.submission_id}/").content.decode()
    assert 'id="default-temperature"' in page
    status_page = client.get(f"/submissions/{job.submission_id}/generation/").content.decode()
    assert 'id="ran-default-temperature"' in status_page


def test_a_reasoning_endpoint_refusing_temperature_is_recorded(client, owner, imported_sample, endpoint_settings,
                                                              sent, django_capture_on_commit_callbacks):
    with FakeEndpoint(reasoning=True) as endpoint:
        with django_capture_on_commit_callbacks(execute=True):
            assert api_post(owner, fields(endpoint.base_url)).status_code == 201
        job = GenerationJob.objects.get()
        assert not job.default_temperature and run_job(job, django_capture_on_commit_callbacks) == "done"
    assert job.ran_at_default_temperature and job.generation_notes
    assert 'id="default-temperature"' in client.get(f"/submissions/{job.submission_id}/").content.decode()


def test_an_unknown_length_parameter_is_refused(owner, imported_sample, endpoint_settings):
    response = api_post(owner, {**fields("https://api.example.com/v1"), "length_parameter": "max_output"})
    assert response.status_code == 400 and "length_parameter" in response.json()

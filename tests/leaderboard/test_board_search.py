"""The board's search (q=), its column chooser, and the per-model page."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from leaderboard.cache import bump_generation
from leaderboard.models import Submission
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_entry, make_tasks

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()


def board():
    tasks = make_tasks(2, split="dev")
    make_entry(make_user(), split="dev", tasks=tasks, finals=(0.9, 0.8), model_name="Alpha-VL", organisation="Lab A")
    make_entry(make_user(), split="dev", tasks=tasks, finals=(0.5, 0.4), model_name="Beta", organisation="Alpha Inc")
    make_entry(make_user(), split="dev", tasks=tasks, finals=(0.2, 0.1), model_name="Gamma", organisation="Lab C")
    bump_generation()


def test_search_matches_model_or_organisation_and_keeps_ranks(client):
    board()
    data = client.get("/api/v1/leaderboard/", {"split": "dev", "q": "alpha"}).json()
    assert [(e["model_name"], e["rank"]) for e in data["entries"]] == [("Alpha-VL", 1), ("Beta", 2)]
    assert data["count"] == 2
    gamma = client.get("/api/v1/leaderboard/", {"split": "dev", "q": " gamma "}).json()["entries"]
    assert [(e["model_name"], e["rank"]) for e in gamma] == [("Gamma", 3)]
    page = client.get("/", {"split": "dev", "q": "lab c"}).content.decode()
    assert "Gamma" in page and "Alpha-VL" not in page and 'id="search-note"' in page
    assert 'value="lab c"' in page


@pytest.mark.parametrize("q", ["x" * 101, "a\x00b"])
def test_a_bad_search_is_a_400(client, q):
    assert client.get("/api/v1/leaderboard/", {"q": q}).status_code == 400
    assert client.get("/", {"q": q}).status_code == 400


def test_the_column_chooser_is_static_and_marks_every_cell(client):
    board()
    page = client.get("/", {"split": "dev"}).content.decode()
    assert 'id="lb-columns"' in page and 'data-column="date"' in page and 'data-column="model"' not in page
    assert "/static/js/columns.js" in page and "<script>" not in page
    assert page.count('class="num hide-mobile col-date"') == 3


def test_the_model_page_lists_every_public_entry_across_splits_and_protocols(client):
    owner = make_user()
    make_entry(owner, split="dev", tasks=make_tasks(1, split="dev"), finals=(0.6,), model_name="Delta")
    make_entry(owner, split="test", tasks=make_tasks(1), finals=(0.3,), model_name="delta", protocol="iwr-det-1")
    make_entry(owner, split="dev", final=0.9, model_name="Delta", public=False)
    make_entry(owner, split="dev", final=0.8, model_name="Delta", kind=Submission.Kind.BUNDLE,
               flagged=True, flag_reason="copied")
    page = client.get("/models/Delta/")
    assert page.status_code == 200
    body = page.content.decode()
    assert body.count("<tr>") == 3  # header + two public, unflagged entries
    assert "iwr-det-1" in body and "iwr-det-17" in body and "90.00" not in body and "80.00" not in body
    assert client.get("/models/Nobody/").status_code == 404

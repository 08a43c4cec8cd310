"""GET /api/v1/leaderboard/: the view as JSON, anonymous, throttled, cached, constant in queries."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle

from leaderboard import exports, ranking
from leaderboard.cache import bump_generation
from leaderboard.models import Submission
from leaderboard.models.submissions import PAPER_PROTOCOL
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_entry, make_task, make_task_set

pytestmark = pytest.mark.django_db
URL = "/api/v1/leaderboard/"


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts with an empty cache (ids are reused between tests, throttle counts too)."""
    cache.clear()


def populate(n_models: int) -> None:
    task_set = make_task_set()
    tasks = [make_task(task_set, split="test") for _ in range(3)]
    for index in range(n_models):
        make_entry(make_user(), model_name=f"m{index}", tasks=tasks,
                   finals=[(index + k) % 5 / 5 for k in range(3)], open_weights=index % 2 == 0)
    make_entry(None, kind=Submission.Kind.BASELINE, model_name="Empty page (lower bound)", final=0.01)
    make_entry(None, kind=Submission.Kind.PAPER, model_name="GPT-5", protocol=PAPER_PROTOCOL, final=0.3635)
    bump_generation()


def test_anonymous_readers_get_the_default_view(client):
    """Without parameters: test split, iwr-det's current version, every entry with fractions and intervals."""
    populate(3)
    data = client.get(URL).json()
    board = ranking.leaderboard(ranking.parse_query({}))
    assert data["split"] == "test" and data["protocol"] == "iwr-det-17" and data["count"] == 4
    assert data == exports.document(board) | {"offset": 0, "limit": 100, "next": None, "previous": None}
    assert [item["model_name"] for item in data["entries"]] == [e.model_name for e in board.entries]
    first = data["entries"][0]
    assert 0 <= first["final"] <= 1 and len(first["final_ci"]) == 2 and first["rank"] == 1
    entry = board.entries[0]
    assert [first[f"{name}_ci"] for name in ranking.SCORE_FIELDS] == [
        list(getattr(entry, f"{name}_ci")) for name in ranking.SCORE_FIELDS]  # Low- and High-level too
    assert data["entries"][-1]["baseline"] is True and data["entries"][-1]["rank"] is None


def test_parameters_choose_split_protocol_and_filters(client):
    """split, protocol (name, full name or paper) and filters work as on the pages."""
    populate(4)
    paper = client.get(URL, {"protocol": "paper"}).json()
    assert paper["protocol"] == PAPER_PROTOCOL and [e["model_name"] for e in paper["entries"]] == ["GPT-5"]
    assert paper["entries"][0]["reported_in_paper"] is True and paper["entries"][0]["final_ci"] is None
    assert paper["entries"][0]["low_level_ci"] is None and paper["entries"][0]["high_level_ci"] is None
    assert client.get(URL, {"protocol": "iwr-det-17"}).json()["count"] == 5
    open_only = client.get(URL, {"weights": "open"}).json()
    assert {e["model_name"] for e in open_only["entries"]} == {"m0", "m2", "Empty page (lower bound)"}
    assert client.get(URL, {"split": "dev"}).json()["entries"] == []


def test_long_views_come_in_pages(client):
    """limit/offset page through every row; count is the total; next/previous link the pages."""
    populate(5)
    first = client.get(URL, {"limit": 2}).json()
    assert first["count"] == 6 and len(first["entries"]) == 2 and first["previous"] is None
    assert first["next"] == "http://testserver/api/v1/leaderboard/?split=test&protocol=iwr-det-17&offset=2&limit=2"
    names = [e["model_name"] for e in first["entries"]]
    url = first["next"]
    while url:
        page = client.get(url).json()
        names += [e["model_name"] for e in page["entries"]]
        url = page["next"]
    assert names == [e["model_name"] for e in client.get(URL).json()["entries"]]
    assert page["previous"] == "http://testserver/api/v1/leaderboard/?split=test&protocol=iwr-det-17&offset=2&limit=2"


@pytest.mark.parametrize(("params", "message"), [
    ({"split": "train"}, "split='train' is not valid"),
    ({"limit": "0"}, "limit=0 is out of range (1 to 1000)"),
    ({"limit": "5000"}, "limit=5000 is out of range"),
    ({"offset": "-1"}, "offset=-1 is out of range"),
    ({"offset": "x"}, "offset='x' is not valid"),
])
def test_bad_parameters_get_400_with_the_reason(client, params, message):
    """An unknown value answers 400 naming the parameter."""
    response = client.get(URL, params)
    assert response.status_code == 400
    assert message in response.json()["detail"]


def test_the_api_is_read_only(client, owner):
    """Writes are refused even for signed-in users."""
    client.force_login(owner)
    assert client.post(URL, {}).status_code == 405


@pytest.mark.parametrize("n_models", [2, 25])
def test_the_answer_costs_a_constant_number_of_queries_and_is_cached(client, n_models, django_assert_max_num_queries):
    """At most five queries cold whatever the size (one of them finds no stored board: the view is ranked;
    test_stored_board.py counts a stored one's); none once cached for the generation."""
    populate(n_models)
    with django_assert_max_num_queries(5):
        first = client.get(URL)
    with django_assert_max_num_queries(0):
        second = client.get(URL)
    assert first.content == second.content


def test_anonymous_clients_are_throttled(client, monkeypatch):
    """Past the anonymous rate the API answers 429."""
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "2/minute", "user": "5/minute"})
    populate(1)
    codes = [client.get(URL).status_code for _ in range(3)]
    assert codes == [200, 200, 429]


def test_the_browsable_api_renders_the_same_document(client):
    """Asking for HTML gets DRF's browsable page with the document in it."""
    populate(1)
    response = client.get(URL, HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and b"m0" in response.content and b"iwr-det-17" in response.content


def test_the_schema_documents_every_field_of_an_entry(client):
    """The OpenAPI entry schema names each field an entry carries, every score's interval included."""
    populate(1)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]

    def resolved(node: dict) -> dict:
        return components[node["$ref"].rsplit("/", 1)[-1]] if "$ref" in node else node

    response = resolved(schema["paths"][URL]["get"]["responses"]["200"]["content"]["application/json"]["schema"])
    documented = set(resolved(response["properties"]["entries"]["items"])["properties"])
    assert set(client.get(URL).json()["entries"][0]) <= documented
    assert "tasks" in documented  # per_task=1
    assert {"low_level_ci", "high_level_ci"} <= documented

"""The deployment guide and the About page say what a scoring job can and cannot see, in a short table."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.urls import reverse

from evaluator import isolation

ROOT = Path(__file__).resolve().parents[2]


class Tables(HTMLParser):
    """The cells of every table row of a page, as text."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


@pytest.mark.django_db
def test_the_about_page_has_the_table_of_what_a_job_can_and_cannot_see(client):
    parser = Tables()
    parser.feed(client.get(reverse("about")).content.decode())
    rows = {row[0]: row[1:] for row in parser.rows if row}
    assert rows[""] == ["A scoring job can see", "A scoring job cannot see"]
    assert {"Files", "Environment", "Network", "Privileges"} <= set(rows)
    assert "secret key" in rows["Files"][1] and "other splits' ground truth" in rows["Files"][1]
    assert "model API keys" in rows["Environment"][1] and rows["Network"][0] == "nothing"


def test_the_deployment_guide_has_the_same_table_and_names_every_withheld_secret():
    text = (ROOT / "docker" / "README.md").read_text()
    table = text.split("What a job can and cannot see, in either sandbox:", 1)[1].split("\n\n", 2)[1]
    cells = [line.split("|") for line in table.splitlines()]
    rows = {row[1].strip(): row[2:4] for row in cells if len(row) > 4}
    assert {"files", "environment", "network", "privileges"} <= set(rows)
    withheld = rows["environment"][1]
    for name in ("DJANGO_SECRET_KEY", "IWR_ENCRYPTION_KEY", "DATABASE_URL"):
        assert name in withheld and name not in isolation.PASSED_ENV and name not in isolation.FIXED_ENV
    assert re.search(r"`var/`.*home folder.*`/run`.*socket", rows["files"][1])

"""The About page says how the judge was validated, with the figures of the committed calibration runs."""

from __future__ import annotations

import json

import pytest

from leaderboard.views.site import VALIDATION_FILE

pytestmark = pytest.mark.django_db


def test_the_about_page_shows_every_half_of_every_measured_run(client):
    document = json.loads(VALIDATION_FILE.read_text())
    page = client.get("/about/").content.decode()
    assert 'id="judge-validation"' in page and "held-out half" in page and "tuning half" in page
    rows = page.split('id="validation-figures"')[1].split("</table>")[0]
    for run in document["runs"]:
        for half, figures in run["halves"].items():
            pct = round(100 * figures["relations_held"] / figures["relations_total"], 1)
            cell = f"{figures['relations_held']} / {figures['relations_total']} ({pct}%)"
            assert cell in rows, (run["protocol"], half)
            assert f"{figures['reference_ifs_1']} / {figures['tasks']}" in rows
            assert f"{figures['step_recall']:.3f}" in rows
    assert rows.count("<tr>") == 1 + sum(len(run["halves"]) for run in document["runs"])


def test_the_committed_figures_are_consistent():
    """Counts within their totals and the halves add up to the corpus: a figure typed by hand would show."""
    document = json.loads(VALIDATION_FILE.read_text())
    corpus = document["corpus"]
    assert corpus["tuning_tasks"] + corpus["held_out_tasks"] == corpus["tasks"]
    assert document["runs"][-1]["corpus"] == corpus  # the latest runs measure today's corpus
    for run in document["runs"]:
        assert set(run["halves"]) == {"tuning", "held_out"}
        measured = run["corpus"]  # the corpus of the day it was measured (the tuning half has grown)
        assert measured["tuning_tasks"] + measured["held_out_tasks"] == measured["tasks"]
        for half, figures in run["halves"].items():
            assert figures["tasks"] == measured[f"{half}_tasks"]
            assert 0 <= figures["relations_held"] <= figures["relations_total"]
            assert 0 <= figures["reference_ifs_1"] <= figures["tasks"]
            assert 0 <= figures["stops_at_truth"] <= figures["stops_total"]
            assert 0 <= figures["step_precision"] <= 1 and 0 <= figures["step_recall"] <= 1


def test_the_protocol_table_names_the_version_a_bare_name_means(client):
    """The About page's protocol table takes the default version from the evaluator's registry."""
    from evaluator.protocols import get_protocol

    page = client.get("/about/").content.decode()
    assert f"default: version {get_protocol().version}</span>" in page
    assert f"<code>{get_protocol().full_name}</code>" in page


def test_the_about_page_lists_every_version_of_the_default_protocol_newest_first(client):
    """Each iwr-det version this site can score under, with what it judges and its parameter fingerprint; the one a
    bare name means is marked, and versions run from the newest down."""
    from evaluator.protocols import PROTOCOLS, get_protocol

    page = client.get("/about/").content.decode()
    table = page.split('id="det-versions"')[1].split("</details>")[0]
    family = sorted((p for p in PROTOCOLS.values() if p.name == "iwr-det"), key=lambda p: int(p.version))
    assert len(family) >= 15
    at = [table.index(f"<code>{p.full_name}</code>") for p in family]
    assert at == sorted(at, reverse=True)  # newest first
    for protocol in family:
        row = table.split(f"<code>{protocol.full_name}</code>")[1].split("</tr>")[0]
        assert f"<code>{protocol.fingerprint()}</code>" in row
        assert ("the default" in row) == (protocol is get_protocol())
    assert table.count("the default") == 1 and "iwr-official" not in table

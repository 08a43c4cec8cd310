"""The About page's BibTeX and the repository's CITATION.cff name the same paper and authors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def cff_authors() -> list[str]:
    text = (ROOT / "CITATION.cff").read_text()
    preferred = text[text.index("preferred-citation"):]
    return [f"{family.strip()}, {given.strip()}"
            for given, family in re.findall(r"given-names: (.+)\n\s+family-names: (.+)", preferred)]


def test_the_about_page_offers_the_papers_bibtex_with_a_copy_button(client):
    """One entry, the CITATION.cff authors in order, the arXiv id, and a button wired by a static script."""
    page = client.get("/about/").content.decode()
    entry = re.search(r'<pre id="bibtex"><code>(.*?)</code></pre>', page, re.S).group(1)
    authors = re.search(r"author\s*=\s*\{(.*?)\},\n", entry, re.S).group(1).split(" and ")
    assert authors == cff_authors() and len(authors) > 1
    assert entry.startswith("@inproceedings{") and "2509.24709" in entry and "year      = {2026}" in entry
    assert 'id="copy-bibtex" data-copies="bibtex"' in page and "js/cite.js" in page
    assert (ROOT / "static" / "js" / "cite.js").is_file()

"""The site serves the command-line client as one file that runs with nothing but python3."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evaluator import submit_client

pytestmark = pytest.mark.django_db


def test_the_client_downloads_as_one_versioned_file_that_runs_alone(client, tmp_path):
    """The download is the client module itself, named with its version; copied anywhere it answers --version."""
    response = client.get("/client/iwr-submit.py")
    assert response.status_code == 200 and response["X-Client-Version"] == submit_client.__version__
    assert f'filename="iwr-submit-{submit_client.__version__}.py"' in response["Content-Disposition"]
    script = tmp_path / "iwr-submit.py"
    script.write_bytes(response.content)
    run = subprocess.run([sys.executable, "-I", str(script), "--version"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == f"iwr-submit {submit_client.__version__}"


@pytest.mark.parametrize("url", ["/submit/", "/about/", "/api/docs/"])
def test_the_submit_about_and_api_pages_link_the_client(client, owner, url):
    client.force_login(owner)
    page = client.get(url)
    assert page.status_code == 200 and 'href="/client/iwr-submit.py"' in page.content.decode()

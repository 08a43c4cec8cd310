"""Reusable checks that held-out ground truth never reaches a non-staff reader.

The secrets of test-split tasks are their action descriptions, assertions, typed text,
source website, checkpoint images and reference data. :func:`held_out_secrets` reads
them from the database and the stored task files; :func:`crawl` fetches pages as the
given client (anonymous or a signed-in non-staff user), follows every same-site link it
finds (HTML ``href``/``src``, URLs inside JSON) and looks for secrets in each body,
inside zip downloads too.

Other areas extend the check by calling it with their own start pages and data, e.g.::

    from tests.leaderboard import secrecy

    def test_submission_pages_keep_ground_truth_secret(client, outsider, scored_submission):
        secrets = secrecy.held_out_secrets()
        logged_in(client, outsider)
        secrecy.crawl(client, [*secrecy.start_urls(), f"/submissions/{scored_submission.pk}/"], secrets)

:func:`start_urls` lists every route of the URL map that takes no parameter, so new
list pages are crawled (and pages they link to) without anyone registering them.
"""

from __future__ import annotations

import html
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.exceptions import NoReverseMatch

from leaderboard.models import Task
from leaderboard.models.tasks import Split

# Pages a non-staff reader never gets, or that change state.
EXCLUDED_PREFIXES = ("/admin/", "/static/", "/accounts/logout/")
# Shorter strings (say a pressed key "Enter") are too common to prove a leak.
MIN_SECRET_LENGTH = 8
HOST = "testserver"
_LINK = re.compile(r"""(?:href|src|action)\s*=\s*["']([^"'#]+)""", re.I)


@dataclass
class Secrets:
    texts: set[str] = field(default_factory=set)
    blobs: dict[str, bytes] = field(default_factory=dict)  # name -> file content
    url_parts: set[str] = field(default_factory=set)  # e.g. links to a held-out task's checkpoints

    def __bool__(self) -> bool:
        return bool(self.texts or self.blobs)


def held_out_secrets(tasks=None) -> Secrets:
    """Every secret of the given tasks (default: all test-split tasks in the database)."""
    secrets = Secrets()
    for task in tasks if tasks is not None else Task.objects.filter(split=Split.TEST).select_related("task_set"):
        add_record_secrets(secrets, task.record)
        add_file_secrets(secrets, task)
        secrets.url_parts.add(f"/{task.task_set.slug}/{task.key}/files/checkpoints/")
    return secrets


def add_record_secrets(secrets: Secrets, record: dict) -> None:
    values = [record.get("source_website")]
    for action in record.get("action_sequence") or []:
        params = action.get("parameters") or {}
        values += [params.get("description"), params.get("text"), action.get("logical_assertion")]
    secrets.texts.update(v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET_LENGTH)


def add_file_secrets(secrets: Secrets, task: Task) -> None:
    for folder in ("checkpoints", "reference"):
        path = task.files_path / folder
        for file_path in sorted(path.rglob("*")) if path.is_dir() else []:
            if not file_path.is_file():
                continue
            data = file_path.read_bytes()
            secrets.blobs[f"{task.key}/{file_path.relative_to(task.files_path)}"] = data
            if file_path.suffix == ".json":
                text = json.loads(data).get("text") if data.strip().startswith(b"{") else None
                if isinstance(text, str) and len(text) >= MIN_SECRET_LENGTH:
                    secrets.texts.add(text)


def add_page_artifacts(secrets: Secrets, evaluation) -> None:
    """The recorded screenshots and replay video of an evaluation whose pages are ground truth (a
    held-out split's reference baseline): their bytes, and any link to them, count as leaks."""
    from django.conf import settings

    folder = Path(settings.ARTIFACTS_ROOT) / evaluation.artifacts_dir / "tasks"
    for path in sorted(folder.glob("*/*")):
        if path.name == "replay.mp4" or path.suffix == ".png":
            secrets.blobs[f"evaluation {evaluation.pk}: {path.relative_to(folder)}"] = path.read_bytes()
            secrets.url_parts.add(f"/results/{evaluation.pk}/tasks/{path.parent.name}/files/{path.name}")


def find_leaks(body: bytes, secrets: Secrets) -> list[str]:
    """What of ``secrets`` ``body`` reveals (zip archives are opened and searched too)."""
    leaks = [f"file {name}" for name, blob in secrets.blobs.items() if blob and blob in body]
    text = body.decode("utf-8", "replace")
    for secret in secrets.texts:
        spellings = {secret, html.escape(secret), json.dumps(secret)[1:-1],
                     json.dumps(secret, ensure_ascii=False)[1:-1]}
        if any(spelling in text for spelling in spellings):
            leaks.append(f"text {secret!r}")
    leaks += [f"link to {part}" for part in secrets.url_parts if part in text]
    if body[:4] == b"PK\x03\x04":
        leaks += _zip_leaks(body, secrets)
    return leaks


def _zip_leaks(body: bytes, secrets: Secrets) -> list[str]:
    leaks = []
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        for info in archive.infolist():
            leaks += [f"{info.filename}: {leak}" for leak in find_leaks(archive.read(info), secrets)]
    return leaks


def start_urls(exclude_prefixes=EXCLUDED_PREFIXES) -> list[str]:
    """Every GET-able route of the URL map that needs no parameter (admin excluded)."""
    found = []
    for name in _route_names(get_resolver().url_patterns, namespace=""):
        try:
            url = reverse(name)
        except NoReverseMatch:
            continue  # the route takes parameters: reached by following links instead
        if not url.startswith(exclude_prefixes) and url not in found:
            found.append(url)
    return found


def _route_names(patterns, namespace: str):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                continue
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _route_names(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}{pattern.name}"


def crawl(client, start: list[str], secrets: Secrets, limit: int = 600) -> list[str]:
    """Fetch ``start`` and every same-site page they link to; fail on any leak or server error.

    Returns the URLs fetched, so a test can check the crawl reached what it should.
    """
    assert secrets, "no secrets to look for: the crawl would prove nothing"
    queue, seen, problems = list(start), set(start), []
    while queue and len(seen) <= limit:
        url = queue.pop(0)
        response = _get(client, url)
        body = _body(response)
        if response.status_code >= 500:
            problems.append(f"{url}: server error {response.status_code}")
        problems += [f"{url}: {leak}" for leak in find_leaks(body, secrets)]
        for link in _links(url, response, body):
            if link not in seen:
                seen.add(link)
                queue.append(link)
    assert not problems, "the secrecy crawl found problems:\n" + "\n".join(problems[:50])
    return sorted(seen)


def assert_no_secrets(client, urls: list[str], secrets: Secrets) -> None:
    """Fetch exactly ``urls`` (no link following) and fail on any leak."""
    problems = []
    for url in urls:
        problems += [f"{url}: {leak}" for leak in find_leaks(_body(_get(client, url)), secrets)]
    assert not problems, "ground truth reached a non-staff reader:\n" + "\n".join(problems)


def _get(client, url: str):
    """GET as a browser would see it: a view that raises gives a 500 page, not an exception."""
    raising = client.raise_request_exception
    client.raise_request_exception = False
    try:
        return client.get(url)
    finally:
        client.raise_request_exception = raising


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _links(base: str, response, body: bytes) -> list[str]:
    if 300 <= response.status_code < 400 and response.get("Location"):
        candidates = [response["Location"]]
    else:
        content_type = response.get("Content-Type", "")
        if "html" in content_type:
            candidates = [html.unescape(link) for link in _LINK.findall(body.decode("utf-8", "replace"))]
        elif "json" in content_type:
            candidates = list(_json_strings(json.loads(body or b"null")))
        else:
            candidates = []
    links = []
    for candidate in candidates:
        parts = urlsplit(urljoin(f"http://{HOST}{base}", candidate))
        if parts.scheme in ("http", "https") and parts.netloc == HOST:
            url = parts.path + (f"?{parts.query}" if parts.query else "")
            if not url.startswith(EXCLUDED_PREFIXES):
                links.append(url)
    return links


def _json_strings(value):
    if isinstance(value, str):
        if value.startswith(("/", f"http://{HOST}/")):
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)

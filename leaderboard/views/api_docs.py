"""The public API's OpenAPI schema (drf-spectacular), Swagger UI and a docs page made from it.

No CDN: Swagger UI's files come from drf-spectacular-sidecar through our static files, and its
start-up script is a separate file (no inline script). ``/api/schema/`` serves YAML, or JSON with
``?format=json`` or ``Accept: application/vnd.oai.openapi+json``.
"""

from __future__ import annotations

import functools
import html
import re

from django.conf import settings
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

import evaluator

METHOD_ORDER = ("get", "post", "put", "patch", "delete")

@functools.lru_cache(maxsize=1)
def schema() -> dict:
    """The OpenAPI document drf-spectacular builds from the API's views (the URL map does not change
    while the process runs)."""
    return SchemaGenerator().get_schema(request=None, public=True) or {}


schema_view = SpectacularAPIView.as_view()
swagger_view = SpectacularSwaggerSplitView.as_view(url_name="api-schema")


def operations(document: dict) -> list[dict]:
    """Every operation of the schema as display rows, grouped by path in URL order."""
    rows = []
    schemas = (document.get("components") or {}).get("schemas") or {}
    for path, item in sorted((document.get("paths") or {}).items()):
        for method in METHOD_ORDER:
            operation = item.get(method)
            if operation:
                rows.append(_operation(path, method, operation, schemas))
    return rows


def _operation(path: str, method: str, operation: dict, schemas: dict) -> dict:
    return {
        "path": path, "method": method.upper(), "id": operation.get("operationId", f"{method}{path}"),
        "description": describe(operation.get("description") or ""),
        "parameters": [{"name": p.get("name"), "in": p.get("in"), "required": p.get("required", False),
                        "description": p.get("description", ""), "type": _type(p.get("schema") or {})}
                       for p in operation.get("parameters") or []],
        "body": _body_fields(operation.get("requestBody") or {}, schemas),
        "responses": sorted((operation.get("responses") or {}).items()),
        "anonymous": {} in (operation.get("security") or [{}]),  # an empty requirement: no credentials
    }


def describe(text: str) -> str:
    """A docstring as safe HTML: escaped, `code` (or ``code``) spans kept, paragraphs as line breaks."""
    escaped = html.escape(text.strip()).replace("``", "`")
    return mark_safe(re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped).replace("\n\n", "<br><br>"))  # noqa: S308


def _type(schema: dict) -> str:
    if "enum" in schema:
        return " | ".join(str(value) for value in schema["enum"])
    return str(schema.get("type") or schema.get("format") or "")


def _body_fields(body: dict, schemas: dict) -> list[dict]:
    for media in ("multipart/form-data", "application/json"):
        schema = _resolve(((body.get("content") or {}).get(media) or {}).get("schema") or {}, schemas)
        if schema.get("properties"):
            required = set(schema.get("required") or [])
            return [{"name": name, "type": _type(spec), "required": name in required,
                     "description": spec.get("description", "") or spec.get("title", "")}
                    for name, spec in schema["properties"].items() if not spec.get("readOnly")]
    return []


def _resolve(schema: dict, schemas: dict) -> dict:
    """A ``{"$ref": "#/components/schemas/Name"}`` replaced by the schema it names."""
    ref = schema.get("$ref", "")
    return schemas.get(ref.rsplit("/", 1)[-1], {}) if ref.startswith("#/components/schemas/") else schema


@require_GET
def api_docs(request):
    """How to use the API, with every endpoint of the schema."""
    rates = settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_RATES", {})
    return render(request, "leaderboard/rankings/api_docs.html", {
        "operations": operations(schema()), "rates": rates, "site_url": settings.SITE_URL.rstrip("/"),
        "version": evaluator.__version__,
    })

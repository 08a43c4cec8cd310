"""The public API's OpenAPI schema and a docs page rendered from it on the server.

No Swagger UI or Redoc from a CDN: the page is plain HTML made from the same schema that
``/api/schema/`` serves (JSON by default, YAML with ``?format=openapi``).
"""

from __future__ import annotations

import functools
import html
import inspect
import re

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONOpenAPIRenderer, OpenAPIRenderer
from rest_framework.request import Request
from rest_framework.schemas import get_schema_view, openapi
from rest_framework.schemas.inspectors import ViewInspector

import evaluator

TITLE = "IWR-Bench leaderboard API"
DESCRIPTION = (
    "Read-only leaderboard and task data for everyone (anonymous requests allowed, throttled); "
    "submissions with a personal token (`Authorization: Token KEY`)."
)
METHOD_ORDER = ("get", "post", "put", "patch", "delete")

class FallbackSchema(ViewInspector):
    """For a view DRF cannot introspect (say a viewset without a serializer class): its path,
    method, path parameters and docstring, so one such view never breaks the whole schema."""

    def get_operation(self, path, method):
        action = getattr(self.view, "action", None) or method.lower()
        name = type(self.view).__name__.removesuffix("ViewSet").removesuffix("View")
        parameters = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                      for name in re.findall(r"{(\w+)}", path)]
        handler = getattr(self.view, action, None)
        return {
            "operationId": f"{action}{name}", "description": inspect.getdoc(handler) or inspect.getdoc(self.view) or "",
            "parameters": parameters, "tags": [path.strip("/").split("/")[2] if path.count("/") > 3 else "api"],
            "responses": {"200": {"description": "JSON document."}},
        }

    def get_components(self, path, method):
        return {}


class SchemaGenerator(openapi.SchemaGenerator):
    """DRF's generator, tolerant of views it cannot introspect, marking each operation with
    ``x-anonymous``: whether it answers a request without credentials."""

    def _get_paths_and_endpoints(self, request):
        paths, endpoints = super()._get_paths_and_endpoints(request)
        self.anonymous = {}
        for path, method, view in endpoints:
            try:
                view.schema.get_operation(path, method)
            except (AssertionError, AttributeError, TypeError, ValueError, ImproperlyConfigured):
                view.schema = FallbackSchema()
            self.anonymous[(path, method.lower())] = allows_anonymous(view, method)
        return paths, endpoints

    def get_schema(self, request=None, public=False):
        schema = super().get_schema(request, public)
        for path, item in (schema or {}).get("paths", {}).items():
            for method, operation in item.items():
                operation["x-anonymous"] = self.anonymous.get((path, method), False)
        return schema


def allows_anonymous(view, method: str) -> bool:
    """Whether every permission of ``view`` lets a request without credentials through."""
    plain = HttpRequest()
    plain.method = method.upper()
    request = Request(plain)
    request.user = AnonymousUser()
    try:
        return all(permission.has_permission(request, view) for permission in view.get_permissions())
    except Exception:  # noqa: BLE001 - a permission that needs more context: say credentials are needed
        return False


schema_view = get_schema_view(
    title=TITLE, description=DESCRIPTION, version=evaluator.__version__, public=True,
    permission_classes=[AllowAny], renderer_classes=[JSONOpenAPIRenderer, OpenAPIRenderer],
    generator_class=SchemaGenerator,
)


@functools.lru_cache(maxsize=1)
def schema() -> dict:
    """The OpenAPI document (the URL map does not change while the process runs)."""
    generator = SchemaGenerator(title=TITLE, description=DESCRIPTION, version=evaluator.__version__)
    return generator.get_schema(request=None, public=True) or {}


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
        "anonymous": bool(operation.get("x-anonymous")),
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

"""The API object (django-ninja): routers, strict body parsing, JSON errors, the OpenAPI document.

django-ninja's interactive docs page and its /openapi.json are switched off: the API serves CI
jobs, not browsers, and the page would load its scripts from a CDN that the site's content security
policy (rightly) refuses. The reference is docs/api/openapi.yaml, written from this code by
`manage.py api_schema` and checked against it by the test suite.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest
from ninja import NinjaAPI
from ninja.parser import Parser

from reviewapp.api import snapshots, sweeps
from reviewapp.api.errors import install_handlers
from scoring.strictjson import strict_loads

PREFIX = "/api/v1"

DESCRIPTION = """\
For CI and scripts. Authenticate with `Authorization: Bearer <token>`; create a token with
`python manage.py create_api_token USERNAME --name NAME --scope SCOPE [--scope ...] [--language CODE ...]`
(printed once; only its sha256 is stored).
A token acts as its user (the same role and languages as in the web pages) and never beyond its
scopes: `read-sweeps` (a sweep's status and gate), `run-sweeps` (start sweeps, and read them;
leads and admins), `read-snapshots` (list and download snapshots; leads and admins). A token
limited to languages sees only sweeps and snapshots of those languages and starts sweeps only in
them ("fr" covers "fr-CA"). A missing scope or language is a 403.
Every answer under /api/ is JSON, errors included: `{"error": "...", "status": N}` for 400, 401,
403, 404 (an unknown URL too), 405, 409 and 500. Request bodies are strict JSON: NaN, Infinity,
a repeated key, an unknown field or a value of the wrong type is a 400 naming the field.
"""


class StrictParser(Parser):
    """Bodies are read with the same strict JSON as every import (no NaN, no repeated key)."""

    def parse_body(self, request: HttpRequest) -> Any:
        return strict_loads(request.body)


api = NinjaAPI(
    title="Tribunal API",
    version="1",
    description=DESCRIPTION,
    urls_namespace="api",
    docs_url=None,
    openapi_url=None,
    parser=StrictParser(),
    servers=[{"url": PREFIX}],
)
install_handlers(api)
api.add_router("", sweeps.router)
api.add_router("", snapshots.router)


def openapi_document() -> dict:
    """The OpenAPI 3.1 document of the API, paths relative to its server URL (/api/v1)."""
    # A JSON round trip turns ninja's schema objects and integer status keys into plain YAML-able data.
    return json.loads(json.dumps(api.get_openapi_schema(path_prefix="")))


def openapi_yaml() -> str:
    import yaml  # only the schema command and its test need it

    return yaml.safe_dump(openapi_document(), sort_keys=False, allow_unicode=True, width=110)

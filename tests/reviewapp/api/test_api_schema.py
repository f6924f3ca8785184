"""The OpenAPI document is made from the code, and the running API keeps to it (schemathesis, in-process WSGI)."""

import json
from dataclasses import dataclass

import pytest
import schemathesis
import yaml
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import CommandError, call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from reviewapp.api.site import openapi_document
from reviewapp.exports.services.exports import snapshot_create, snapshot_write
from reviewapp.models import ExportSnapshot, Sweep
from reviewapp.people.services.api_tokens import SCOPES, api_token_create
from tests.factories import dataset_of_calls, store_judge
from tests.reviewapp.corpus.test_import_eva_validation import REPO

COMMITTED = REPO / "docs" / "api" / "openapi.yaml"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

schema = schemathesis.openapi.from_dict(openapi_document())
schema.app = WSGIHandler()


def test_the_committed_openapi_file_is_the_one_the_code_makes():
    call_command("api_schema", "--check", "--output", str(COMMITTED))
    assert yaml.safe_load(COMMITTED.read_text())["paths"].keys() == {
        "/sweeps",
        "/sweeps/{sweep_id}",
        "/sweeps/{sweep_id}/gate",
        "/snapshots",
        "/snapshots/{snapshot_id}/download",
    }


def test_the_schema_check_fails_on_a_stale_file(tmp_path):
    stale = tmp_path / "openapi.yaml"
    stale.write_text(COMMITTED.read_text().replace("Start a sweep", "Begin a sweep"))
    with pytest.raises(CommandError, match="not what the API's code describes"):
        call_command("api_schema", "--check", "--output", str(stale))
    call_command("api_schema", "--output", str(stale))
    assert stale.read_text() == COMMITTED.read_text()


def test_the_schema_describes_strict_requests_and_the_error_shape():
    document = openapi_document()
    request = document["components"]["schemas"]["SweepRequest"]
    assert request["additionalProperties"] is False and request["required"] == ["dataset", "judges"]
    assert request["properties"]["repeats"] | {"title": ""} == {
        "default": 1,
        "maximum": 10,
        "minimum": 1,
        "title": "",
        "type": "integer",
    }
    assert document["components"]["schemas"]["Error"]["required"] == ["error", "status"]
    assert document["servers"] == [{"url": "/api/v1"}]
    assert document["components"]["securitySchemes"] == {"TokenAuth": {"type": "http", "scheme": "bearer"}}
    download = document["paths"]["/snapshots/{snapshot_id}/download"]["get"]["responses"]["200"]
    assert set(download["content"]) == {"application/octet-stream", "text/csv"}


@pytest.fixture
def in_process_wsgi():
    """Requests sent straight to the WSGI app keep the test's database connection, as the test client's do:
    Django closes "old" connections when a request starts and finishes, which would end the test transaction."""
    signals = (request_started, request_finished)
    for signal in signals:
        signal.disconnect(close_old_connections)
    yield
    for signal in signals:
        signal.connect(close_old_connections)


@dataclass
class Seeded:
    headers: dict
    sweep: Sweep
    snapshot: ExportSnapshot


@pytest.fixture
def seeded(make_user, media, scripted_llm, run_sweep):
    judge = store_judge("conciseness")
    dataset = dataset_of_calls("api-calls", {"a": ("fr", ["Bonjour [[r=1]]", "Au revoir [[r=3]]"])})
    sweep = run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)
    snapshot = snapshot_write(snapshot_id=snapshot_create(judge=judge.judge, fmt="csv", build=False).pk)
    snapshot_create(judge=judge.judge, fmt="jsonl", build=False)  # a pending one too
    raw = api_token_create(user=make_user("lea", role="lead"), name="ci", scopes=SCOPES)[1]
    return Seeded(headers={"Authorization": f"Bearer {raw}"}, sweep=sweep, snapshot=snapshot)


def _on_seeded_rows(case, seeded: Seeded) -> bool:
    """Point a generated case's path at the seeded rows, so the answers for real rows are checked too."""
    params = case.path_parameters or {}
    if "sweep_id" in params:
        params["sweep_id"] = seeded.sweep.pk
    elif "snapshot_id" in params:
        params["snapshot_id"] = seeded.snapshot.pk
    else:
        return False
    return True


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_the_api_keeps_to_its_schema(case, seeded, in_process_wsgi):
    response = case.call_and_validate(headers=seeded.headers, checks=CHECKS)
    assert response.status_code < 500
    # Cases that try another method (TRACE, DELETE ...) stay as generated: a JSON 405 was checked above.
    if case.method.upper() == case.operation.method.upper() and _on_seeded_rows(case, seeded):
        # The generated case may carry its own Authorization (a wrong one, to test refusals): send the token.
        case.headers = {**(case.headers or {}), **seeded.headers}
        response = case.call_and_validate(headers=seeded.headers, checks=CHECKS)
        assert response.status_code in (200, 400), response.text
        if response.status_code == 200:
            _assert_the_seeded_row(case.operation.path, response, seeded)


def _assert_the_seeded_row(path: str, response, seeded: Seeded) -> None:
    if path == "/snapshots/{snapshot_id}/download":
        headers = {name.lower(): value for name, value in response.headers.items()}
        assert headers["x-checksum-sha256"] in (seeded.snapshot.sha256, [seeded.snapshot.sha256])
    elif path == "/sweeps/{sweep_id}/gate":
        assert json.loads(response.text)["sweep"] == seeded.sweep.pk
    else:
        assert json.loads(response.text)["id"] == seeded.sweep.pk

"""The API reads request bodies with the same strict JSON as every import."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from reviewapp.models import Sweep
from reviewapp.people.services.api_tokens import RUN_SWEEPS, api_token_create
from tests.factories import dataset_of_calls, store_judge

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"dataset": "api-calls", "judges": ["conciseness"], "variance_sample": NaN}', "NaN is not a JSON number"),
        ('{"dataset": "api-calls", "judges": ["conciseness"], "repeats": 1e400}', "too large"),
        ('{"dataset": "api-calls", "dataset": "other", "judges": ["conciseness"]}', "'dataset' appears twice"),
    ],
)
def test_a_sweep_request_with_nan_or_a_repeated_key_is_refused(make_user, body, words):
    store_judge("conciseness")
    dataset_of_calls("api-calls", {"a": ("en", ["Hello"])})
    raw = api_token_create(user=make_user("lea", role="lead"), name="ci", scopes=[RUN_SWEEPS])[1]

    response = Client(enforce_csrf_checks=True).post(
        reverse("api_sweep_create"), data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}"
    )

    assert response.status_code == 400
    assert words in response.json()["error"]
    assert not Sweep.objects.exists()


@pytest.fixture
def lead_token(make_user):
    store_judge("conciseness")
    dataset_of_calls("api-calls", {"a": ("en", ["Hello"])})
    return api_token_create(user=make_user("lea", role="lead"), name="ci", scopes=[RUN_SWEEPS])[1]


def start(raw: str, body) -> dict:
    response = Client(enforce_csrf_checks=True).post(
        reverse("api_sweep_create"),
        data=body if isinstance(body, str) else json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert response.json()["status"] == 400
    return response.json()["error"]


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"judge": "conciseness"}, "`judge` is not a field of this request"),
        ({"repeats": "2"}, "`repeats`: Input should be a valid integer"),
        ({"repeats": True}, "`repeats`: Input should be a valid integer"),
        ({"repeats": 2.5}, "`repeats`: Input should be a valid integer"),
        ({"repeats": 11}, "`repeats`: Input should be less than or equal to 10"),
        ({"variance_sample": "0.1"}, "`variance_sample`: Input should be a valid number"),
        ({"qa_sample": 1.5}, "`qa_sample`: Input should be less than or equal to 1"),
        ({"judges": "conciseness"}, "`judges`: Input should be a valid list"),
        ({"judges": []}, "`judges`: List should have at least 1 item"),
        ({"judges": [3]}, "`judges.0`: Input should be a valid string"),
        ({"dataset": True}, "`dataset`: Input should be a valid string, or Input should be a valid integer."),
        ({"dataset": ""}, "`dataset`: String should have at least 1 character"),
        ({"language": 7}, "`language`: Input should be a valid string"),
        ({"name": "x" * 201}, "`name`: String should have at most 200 characters"),
    ],
)
def test_a_sweep_request_with_an_unknown_field_or_a_wrong_type_names_the_field(lead_token, changes, words):
    assert words in start(lead_token, {"dataset": "api-calls", "judges": ["conciseness"], **changes})
    assert not Sweep.objects.exists()


def test_a_sweep_request_that_is_not_an_object_or_lacks_a_field(lead_token):
    assert start(lead_token, [1, 2]) == "The body must be a JSON object."
    assert start(lead_token, "") == "The body must be a JSON object."
    assert start(lead_token, {"judges": ["conciseness"]}) == "`dataset` is required."
    assert start(lead_token, "{not json").startswith("The body is not valid JSON:")
    assert not Sweep.objects.exists()


def test_a_wrong_method_is_a_json_405_listing_the_right_one(lead_token):
    client = Client(enforce_csrf_checks=True)
    for method, path, allowed in (
        ("get", "/api/v1/sweeps", "POST"),
        ("delete", "/api/v1/sweeps/1", "GET"),
        ("post", "/api/v1/snapshots", "GET"),
        ("put", "/api/v1/sweeps/1/gate", "GET"),
    ):
        response = getattr(client, method)(path, HTTP_AUTHORIZATION=f"Bearer {lead_token}")
        assert response.status_code == 405, path
        assert response["Allow"] == allowed and response["Content-Type"] == "application/json"
        assert response.json() == {"error": f"{method.upper()} is not allowed here; use {allowed}.", "status": 405}


def test_the_framework_pages_are_not_served(lead_token):
    client = Client()
    for path in ("/api/v1/", "/api/v1/docs", "/api/v1/openapi.json"):
        response = client.get(path, HTTP_AUTHORIZATION=f"Bearer {lead_token}")
        assert response.status_code == 404 and response["Content-Type"] == "application/json", path
        assert response.json()["error"] == f"No API endpoint at {path}; see docs/api/openapi.yaml."


def test_a_path_id_that_is_not_a_whole_number_is_a_400_naming_it(lead_token):
    response = Client().get("/api/v1/sweeps/abc", HTTP_AUTHORIZATION=f"Bearer {lead_token}")
    assert response.status_code == 400
    assert response.json() == {
        "error": "`sweep_id`: Input should be a valid integer, unable to parse string as an integer.",
        "status": 400,
    }

"""The API reads request bodies with the same strict JSON as every import."""

import pytest
from django.test import Client
from django.urls import reverse

from reviewapp.models import Sweep
from reviewapp.services.api_tokens import RUN_SWEEPS, api_token_create
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

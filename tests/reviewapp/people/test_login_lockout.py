"""Doors: 30 wrong passwords lock an account for a while; the right one is refused until the cool-off."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

pytestmark = pytest.mark.django_db

PASSWORD = "pw-test-12345"


def attempt(client, username, password):
    return client.post(reverse("login"), {"username": username, "password": password})


def test_thirty_wrong_passwords_lock_the_account_and_the_right_one_is_refused(make_user, settings):
    make_user("ana", role="reviewer", languages=["fr"], password=PASSWORD)
    assert settings.AXES_FAILURE_LIMIT == 30
    client = Client()
    for number in range(29):
        response = attempt(client, "ana", f"wrong-{number}")
        assert response.status_code == 200, number  # the form again, with its error
    assert attempt(client, "ana", "wrong-29").status_code == 429  # the 30th locks it
    locked = attempt(client, "ana", PASSWORD)
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # Another client address is refused too: the account is locked, not the address.
    elsewhere = Client(REMOTE_ADDR="10.9.8.7")
    assert attempt(elsewhere, "ana", PASSWORD).status_code == 429


def test_the_lock_lifts_after_the_cool_off(make_user, settings):
    from axes.models import AccessAttempt

    make_user("ana", role="reviewer", languages=["fr"], password=PASSWORD)
    client = Client()
    for number in range(30):
        attempt(client, "ana", f"wrong-{number}")
    assert attempt(client, "ana", PASSWORD).status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    response = attempt(client, "ana", PASSWORD)
    assert response.status_code == 302
    assert client.session["_auth_user_id"]


def test_a_few_mistakes_then_the_right_password_logs_in_and_resets_the_count(make_user):
    from axes.models import AccessAttempt

    make_user("ana", role="reviewer", languages=["fr"], password=PASSWORD)
    client = Client()
    for number in range(5):
        attempt(client, "ana", f"wrong-{number}")
    assert attempt(client, "ana", PASSWORD).status_code == 302
    assert not AccessAttempt.objects.filter(username="ana", failures_since_start__gt=0).exists()


def test_logins_without_a_request_still_work(make_user):
    make_user("ana", role="reviewer", languages=["fr"], password=PASSWORD)
    assert Client().login(username="ana", password=PASSWORD)

"""Fixtures shared by every test folder."""

import pytest
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from reviewapp.models import Profile, Role

# Property tests check behaviour, not speed: on a busy machine slow examples are not failures.
hypothesis_settings.register_profile("tribunal", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("tribunal")


@pytest.fixture
def make_user(db):
    """Create a user with a Tribunal role and languages: make_user("ana", role="reviewer", languages=["fr"])."""

    def _make(
        username: str, *, role: str = Role.REVIEWER, languages: list[str] | None = None, password: str = "pw-test-12345"
    ):
        user = get_user_model().objects.create_user(username=username, password=password)
        Profile.objects.create(user=user, role=role, languages=languages or [])
        return user

    return _make

"""Fixtures shared by every test folder.

- fast password hashing (autouse): users are made in almost every test and PBKDF2 would dominate the run.
- `make_user(username, role=..., languages=[...])`: a user with a Tribunal role (tests/factories.user).
- `eager_celery`: Celery tasks run in-process for the test.
Test data comes from tests/factories.py (one factory per model, shared builders) and tests/scenarios.py.
"""

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from reviewapp.celery import app as celery_app
from reviewapp.models import Role
from tests import factories

# Property tests check behaviour, not speed: on a busy machine slow examples are not failures.
hypothesis_settings.register_profile("tribunal", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("tribunal")


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """Users are created in almost every test; PBKDF2 would dominate the run time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def make_user(db):
    """Create a user with a Tribunal role and languages: make_user("ana", role="reviewer", languages=["fr"])."""

    def _make(
        username: str, *, role: str = Role.REVIEWER, languages: list[str] | None = None, password: str = "pw-test-12345"
    ):
        return factories.user(username, role=role, languages=languages, password=password)

    return _make


@pytest.fixture
def eager_celery():
    previous = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield celery_app
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = previous

"""Fixtures shared by every test folder.

- fast password hashing (autouse): users are made in almost every test and PBKDF2 would dominate the run.
- `make_user(username, role=..., languages=[...])`: a user with a Tribunal role (tests/factories.user).
- `eager_celery`: Celery tasks run in-process for the test.
- the serverless broker in a folder of the test session (autouse): a task a test queues without
  `eager_celery` (an on-commit dispatch in a live-server or transactional test) never lands in var/broker,
  where the worker of `make run` would pick it up and run it against the demo database.
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


@pytest.fixture(autouse=True, scope="session")
def broker_outside_var(tmp_path_factory):
    """On the filesystem broker (the SQLite suites), this session's queued tasks go to a folder of its
    own; a broker given by the environment (Redis, in the integration suites) is left as it is."""
    options = dict(celery_app.conf.broker_transport_options or {})
    if "data_folder_in" not in options:
        yield None
        return
    folder = tmp_path_factory.mktemp("broker")
    for sub in ("in", "processed", "control"):
        (folder / sub).mkdir()
    celery_app.conf.broker_transport_options = {
        **options,
        "data_folder_in": str(folder / "in"),
        "data_folder_out": str(folder / "in"),
        "processed_folder": str(folder / "processed"),
        "control_folder": str(folder / "control"),
    }
    yield folder
    celery_app.conf.broker_transport_options = options


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

"""Fixtures of the Django suite (it also runs on PostgreSQL through `make test-postgres`).

- `corpus`: the labelled export corpus (tests/scenarios.export_corpus); a test module may define its own.
- `media`: MEDIA_ROOT in a temporary folder.
- `scripted_llm`: sweeps call tests/fake_llms.ScriptedLLM (returned) instead of an endpoint.
- `llm_off`: sweeps have no LLM client.
- `run_sweep(**kwargs)`: start a sweep and run it to the end in-process.
"""

import pytest

from tests import scenarios
from tests.fake_llms import ScriptedLLM


@pytest.fixture
def corpus(make_user):
    return scenarios.export_corpus(make_user)


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def scripted_llm(monkeypatch):
    client = ScriptedLLM()
    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: client)
    return client


@pytest.fixture
def llm_off(monkeypatch):
    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: None)


@pytest.fixture
def run_sweep(eager_celery, django_capture_on_commit_callbacks):
    """Start a sweep and run it to the end in-process (the on-commit dispatch executes eagerly)."""
    from reviewapp.judging.services.sweeps import sweep_start
    from reviewapp.judging.tasks.sweeps import sweep_queue

    def _run(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            sweep = sweep_start(**kwargs, dispatch=sweep_queue)
        sweep.refresh_from_db()
        return sweep

    return _run

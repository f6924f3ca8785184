"""Fixtures shared by the judging tests."""

import pytest

from reviewapp.models import Judge
from scoring.llm import LLMClient
from tests.llm_server import run_llm_server


@pytest.fixture
def endpoint(monkeypatch):
    """The local test LLM server, which sweeps and replays reach through the real LLMClient over HTTP.

    Gives the server (its requests, responses and audio received), with the client as `server.client`.
    """
    with run_llm_server() as server:
        client = LLMClient(base_url=server.base_url, api_key="test", timeout_s=20.0, max_attempts=1)
        monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: client)
        monkeypatch.setattr("reviewapp.judging.services.calls.llm_client_from_settings", lambda **kw: client)
        server.client = client
        yield server
        client.close()


@pytest.fixture
def judge():
    """A binary judge, the one the signature tests write their rules for (a module may name its own)."""
    return Judge.objects.create(slug="task_completion", scale="binary")

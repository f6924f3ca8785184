"""Fixtures shared by the judging tests."""

import pytest

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.models import Comment, GoldLabel, Judge, JudgeVersion
from scoring.llm import LLMClient
from tests.llm_server import run_llm_server
from tests.reviewapp.judging.eva_support import CONCISENESS_SET, JUDGE_YAML, load


@pytest.fixture
def endpoint(monkeypatch):
    """The local test LLM server, which sweeps reach through the real LLMClient over HTTP.

    Gives the server (its requests, responses and audio received), with the client as `server.client`.
    Replays and `replay_call` build their own client from settings or their options, as in production;
    a test that replays through settings patches `calls.llm_client_from_settings` itself.
    """
    with run_llm_server() as server:
        client = LLMClient(base_url=server.base_url, api_key="test", timeout_s=20.0, max_attempts=1)
        monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: client)
        server.client = client
        yield server
        client.close()


@pytest.fixture
def judge():
    """A binary judge, the one the signature tests write their rules for (a module may name its own)."""
    return Judge.objects.create(slug="task_completion", scale="binary")


@pytest.fixture
def conciseness_set():
    summary = dataset_import(path=CONCISENESS_SET, fmt="eva-validation", dataset_name="eva-conciseness")
    assert summary.labels == 479
    return summary


@pytest.fixture
def commented(conciseness_set, django_user_model):
    """EVA's conciseness judge loaded, and a comment on every agent turn of the set's first conversation:
    (version, conversation, its agent turns)."""
    load(JUDGE_YAML, "eva-997ae97")
    version = JudgeVersion.objects.get(judge__slug="conciseness", version="eva-997ae97")
    conversation = GoldLabel.objects.first().conversation
    author = django_user_model.objects.create_user("reviewer")
    agent_turns = list(conversation.turns.filter(role="agent").order_by("position"))
    for turn in agent_turns:
        Comment.objects.create(turn=turn, author=author, body="look")
    return version, conversation, agent_turns


@pytest.fixture
def unbounded_version():
    """Version v1 of a turn judge scaled 1..5 whose spec gives no bounds of its own."""
    judge = Judge.objects.create(slug="bounded", level="turn", scale="ordinal", scale_min=1, scale_max=5)
    spec = {
        "slug": "bounded",
        "version": "v1",
        "level": "turn",
        "scale": "ordinal",
        "scale_min": None,
        "scale_max": None,
        "user_template": "Rate {turn_text}",
    }
    return JudgeVersion.objects.create(judge=judge, version="v1", spec=spec, spec_hash="2" * 64)

"""The LLM call archive, replay, the client from settings and the replay_call command."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from reviewapp.judging.services import calls
from reviewapp.models import Judge, JudgeCall, JudgeVersion, PromptText, Sweep
from scoring.llm import LLMClient, LLMReply
from scoring.ratelimit import LocalRateLimiter
from scoring.ratelimit_slots import RedisSlotReservoir
from tests.llm_answers import good_answer
from tests.llm_server import run_llm_server

pytestmark = pytest.mark.django_db

SYSTEM = "You are a strict judge of conciseness."
USER = "Agent turn: 'Sure! Your booking code is ZK4-19.' Rate it."


@pytest.fixture(autouse=True)
def _fresh_clients():
    calls._clients.clear()
    yield
    for client in calls._clients.values():
        client.close()
    calls._clients.clear()


@pytest.fixture
def judge_version():
    judge = Judge.objects.create(slug="conciseness", name="Conciseness")
    return JudgeVersion.objects.create(judge=judge, version="1", spec={"slug": "conciseness"}, spec_hash="a" * 64)


@pytest.fixture
def server():
    with run_llm_server() as running:
        yield running


def _reply(text='{"rating": 2}', **overrides) -> LLMReply:
    fields = {
        "text": text,
        "prompt_tokens": 40,
        "completion_tokens": 6,
        "latency_ms": 812,
        "attempts": 1,
        "error": "",
    }
    fields.update(overrides)
    return LLMReply(**fields)


def _archive(judge_version, *, system=SYSTEM, user=USER, reply=None, sweep=None, model="judge-model", params=None):
    return calls.call_archive(
        judge_version=judge_version,
        sweep=sweep,
        system=system,
        user=user,
        model=model,
        params=params if params is not None else {"temperature": 0},
        reply=reply or _reply(),
    )


def test_archive_stores_every_field_of_the_call(judge_version):
    sweep = Sweep.objects.create(name="s")
    call = _archive(judge_version, sweep=sweep, reply=_reply(attempts=2))
    call.refresh_from_db()
    assert call.judge_version == judge_version
    assert call.sweep == sweep
    assert call.system_prompt.text == SYSTEM
    assert call.user_prompt.text == USER
    assert call.user_prompt.sha256 == calls.prompt_sha256(USER)
    assert call.model == "judge-model"
    assert call.params == {"temperature": 0}
    assert call.raw_response == '{"rating": 2}'
    assert (call.prompt_tokens, call.completion_tokens, call.latency_ms, call.attempts) == (40, 6, 812, 2)
    assert call.error == ""


def test_archive_stores_each_prompt_text_once(judge_version):
    first = _archive(judge_version, user="turn one")
    second = _archive(judge_version, user="turn two")
    third = _archive(judge_version, user="turn one")
    assert JudgeCall.objects.count() == 3
    # One shared system prompt and two distinct user prompts.
    assert PromptText.objects.count() == 3
    assert first.system_prompt_id == second.system_prompt_id == third.system_prompt_id
    assert first.user_prompt_id == third.user_prompt_id != second.user_prompt_id


def test_archive_reuses_a_prompt_stored_by_someone_else(judge_version):
    existing = PromptText.objects.create(sha256=calls.prompt_sha256(USER), text=USER)
    call = _archive(judge_version)
    assert call.user_prompt_id == existing.pk
    assert PromptText.objects.filter(sha256=existing.sha256).count() == 1


def test_archive_without_a_system_prompt(judge_version):
    call = _archive(judge_version, system="")
    assert call.system_prompt is None
    assert PromptText.objects.count() == 1


def test_archive_keeps_failed_calls_with_their_error(judge_version):
    reply = _reply(text="", prompt_tokens=None, completion_tokens=None, attempts=4, error="HTTP 500: down")
    call = _archive(judge_version, reply=reply)
    call.refresh_from_db()
    assert (call.raw_response, call.error, call.attempts, call.prompt_tokens) == ("", "HTTP 500: down", 4, None)


def test_prompt_texts_store_returns_rows_by_text():
    rows = calls.prompt_texts_store(texts=["a", "b", "a"])
    assert set(rows) == {"a", "b"}
    assert rows["a"].sha256 == calls.prompt_sha256("a")
    assert calls.prompt_texts_store(texts=[]) == {}


def test_replay_sends_the_archived_prompts_again_and_writes_nothing(judge_version, server):
    call = _archive(judge_version, params={"temperature": 0, "max_tokens": 50})
    client = LLMClient(base_url=server.base_url, api_key="k", timeout_s=5)
    old, new = calls.call_replay(call=call, client=client)
    client.close()
    assert old.pk == call.pk
    assert new.error == ""
    (sent,) = server.requests
    assert sent["messages"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("judge-model", 0, 50)
    assert new.text == good_answer(sent)
    assert JudgeCall.objects.count() == 1


def test_replay_to_another_model(judge_version, server):
    call = _archive(judge_version)
    client = LLMClient(base_url=server.base_url, api_key="k")
    calls.call_replay(call=call, client=client, model="other-model")
    client.close()
    assert server.requests[0]["model"] == "other-model"


def test_client_from_settings_is_none_when_the_tier_is_off(settings):
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    assert calls.llm_client_from_settings() is None
    assert "OPENAI_BASE_URL" in calls.llm_tier_off_reason()


def test_client_from_settings_uses_a_local_limiter_without_redis(settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.OPENAI_API_KEY = ""
    settings.REDIS_URL = ""
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.OPENAI_TIMEOUT_SECONDS = 7.5
    assert calls.llm_tier_off_reason() == ""
    client = calls.llm_client_from_settings()
    assert client is not None
    assert client.timeout_s == 7.5
    assert client.base_url == "http://127.0.0.1:9/v1"
    limiter = client.limiter_for("gpt-x")
    assert isinstance(limiter, LocalRateLimiter)
    assert limiter.per_second == calls.DEFAULT_RATE_LIMIT_PER_SECOND
    # One client per configuration: tasks in a worker share its connections and rate buckets.
    assert calls.llm_client_from_settings() is client


def test_client_from_settings_shares_rate_limits_through_redis(settings):
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = "sk-test"
    settings.REDIS_URL = ""
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/15"
    settings.LLM_RATE_LIMITS = {"big-model": 3}
    client = calls.llm_client_from_settings()
    big = client.limiter_for("big-model")
    assert isinstance(big, RedisSlotReservoir)
    assert (big.key, big.per_second) == ("ratelimit:big-model", 3.0)
    spec_rate = client.limiter_for("gpt-x", {"rate_limit_per_second": 8})
    assert (spec_rate.key, spec_rate.per_second) == ("ratelimit:gpt-x", 8.0)
    assert client.limiter_for("gpt-x").per_second == calls.DEFAULT_RATE_LIMIT_PER_SECOND


def _command(*args) -> str:
    out = StringIO()
    call_command("replay_call", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def test_replay_call_command_shows_both_sides_and_the_diff(judge_version, server):
    archived = json.dumps({"rating": 9, "explanation": "old answer", "failure_modes": [], "flags": []})
    call = _archive(judge_version, reply=_reply(text=archived))
    output = _command(call.pk, "--base-url", server.base_url)
    new_text = good_answer(server.requests[0])
    assert f"Call {call.pk} (conciseness@1)" in output
    assert "model     judge-model" in output
    assert "812 ms" in output
    assert "40 in / 6 out" in output
    assert archived in output
    assert new_text in output
    assert "Responses differ:" in output
    assert f"--- call {call.pk} (archived)" in output
    assert '-  "rating": 9' in output
    assert f'+  "rating": {json.loads(new_text)["rating"]}' in output


def test_replay_call_command_says_when_the_answer_is_the_same(judge_version, server):
    body = {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]}
    call = _archive(judge_version, reply=_reply(text=good_answer(body)))
    output = _command(call.pk, "--base-url", server.base_url)
    assert "Same response." in output
    assert "Responses differ" not in output


def test_replay_call_command_shows_a_failed_replay(judge_version):
    with run_llm_server(behaviour="bad_request") as server:
        call = _archive(judge_version)
        output = _command(call.pk, "--base-url", server.base_url)
    assert "HTTP 400: scripted bad request" in output
    assert "(empty)" in output


def test_replay_call_command_errors(judge_version, settings):
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    with pytest.raises(CommandError, match="No archived call"):
        _command(999999)
    call = _archive(judge_version)
    with pytest.raises(CommandError, match="LLM tier is off"):
        _command(call.pk)

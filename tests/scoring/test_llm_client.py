"""LLMClient against the local OpenAI-compatible server, over real HTTP with the real openai client."""

from __future__ import annotations

import json
import time

import pytest

from scoring.llm import LLMClient, LLMReply, is_retryable, reply_from_completion, retry_after_seconds
from scoring.ratelimit import ModelRateLimits, RateLimitTimeout
from tests.llm_answers import good_rating
from tests.llm_server import run_llm_server


class CountingLimiter:
    def __init__(self) -> None:
        self.calls = 0

    def acquire(self) -> None:
        self.calls += 1


class RefusingLimiter:
    def acquire(self) -> None:
        raise RateLimitTimeout("no slot within 0s")


@pytest.fixture(scope="module")
def server():
    with run_llm_server(slow_s=0.4) as running:
        yield running


@pytest.fixture
def client(server):
    limiter = CountingLimiter()
    llm = LLMClient(
        base_url=server.base_url,
        api_key="test-key",
        timeout_s=5.0,
        max_attempts=3,
        rate_limiter=limiter,
        backoff_initial_s=0.05,
        backoff_max_s=0.2,
    )
    yield llm
    llm.close()


def _ask(client, behaviour: str, text: str = "Rate this turn.", **params):
    return client.complete(model="judge-model", system="You are a judge.", user=f"{text} [[llm:{behaviour}]]", **params)


def _requests_for(server, marker: str) -> list[dict]:
    return [body for body in server.requests if marker in body["messages"][-1]["content"]]


def test_good_answer_text_tokens_and_request(server, client):
    reply = client.complete(
        model="judge-model",
        system="You are a judge.",
        user="Turn: hello there [[llm:good]] case-good",
        params={"temperature": 0, "max_tokens": 200, "response_format": {"type": "json_object"}, "repeats": 3},
    )
    assert reply.error == ""
    assert reply.attempts == 1
    answer = json.loads(reply.text)
    (sent,) = _requests_for(server, "case-good")
    assert answer["rating"] == good_rating(sent)
    assert answer["failure_modes"] == []
    # Token counts come from the response's usage block: whitespace words of the messages and answer.
    assert reply.prompt_tokens == 4 + 5  # 'You are a judge.' + 'Turn: hello there [[llm:good]] case-good'
    assert reply.completion_tokens == len(reply.text.split())
    assert sent["model"] == "judge-model"
    assert sent["messages"][0] == {"role": "system", "content": "You are a judge."}
    assert sent["temperature"] == 0
    assert sent["max_tokens"] == 200
    assert sent["response_format"] == {"type": "json_object"}
    assert "repeats" not in sent  # Tribunal's own parameters are not sent to the endpoint
    assert client.rate_limiter.calls == 1


def test_empty_system_prompt_sends_only_the_user_message(server, client):
    reply = client.complete(model="m", system="", user="only user case-nosys")
    assert reply.error == ""
    (sent,) = _requests_for(server, "case-nosys")
    assert [m["role"] for m in sent["messages"]] == ["user"]


@pytest.mark.parametrize(
    ("behaviour", "check"),
    [
        ("bad_json", lambda text: text.startswith('{"rating": 2') and not text.endswith("}")),
        ("missing_keys", lambda text: "rating" not in json.loads(text)),
        ("out_of_range", lambda text: json.loads(text)["rating"] == 7),
        ("unsure", lambda text: json.loads(text)["uncertain"] is True),
        ("unsure_text", lambda text: text.startswith("I'm not sure")),
    ],
)
def test_bad_answers_are_returned_as_text_not_errors(client, behaviour, check):
    # Judging the answer is parse_answer's job; the client returns what the model said.
    reply = _ask(client, behaviour)
    assert reply.error == ""
    assert reply.attempts == 1
    assert check(reply.text)


def _answered_on_the_second_attempt(client, behaviour: str, case: str) -> tuple[LLMReply, float]:
    """Ask for a case the server refuses once: the reply is the second attempt's answer. Gives it and the
    seconds the call took."""
    started = time.monotonic()
    reply = _ask(client, behaviour, case)
    elapsed = time.monotonic() - started
    assert reply.error == ""
    assert reply.attempts == 2
    return reply, elapsed


def test_429_is_retried_after_retry_after(server, client):
    reply, elapsed = _answered_on_the_second_attempt(client, "rate_limited", "case-429")
    assert json.loads(reply.text)["rating"] in (1, 2, 3)
    assert len(_requests_for(server, "case-429")) == 2
    assert elapsed >= 1.0  # Retry-After: 1 was honoured
    assert reply.latency_ms >= 1000
    assert client.rate_limiter.calls == 2  # a rate-limit slot before each attempt


def test_429_retry_after_ms_is_honoured(server, client):
    _, elapsed = _answered_on_the_second_attempt(client, "rate_limited_ms", "case-429ms")
    assert 0.2 <= elapsed < 1.0  # waited the 200 ms asked for, not a second


def test_500_once_is_retried(server, client):
    _answered_on_the_second_attempt(client, "server_error", "case-500-once")
    assert len(_requests_for(server, "case-500-once")) == 2


def test_always_500_gives_an_error_after_max_attempts(server, client):
    reply = _ask(client, "always_500", "case-500-always")
    assert reply.text == ""
    assert reply.attempts == 3
    assert "HTTP 500" in reply.error
    assert "3 attempts" in reply.error
    assert reply.prompt_tokens is None and reply.completion_tokens is None
    assert len(_requests_for(server, "case-500-always")) == 3
    assert client.rate_limiter.calls == 3


def test_400_is_not_retried(server, client):
    reply = _ask(client, "bad_request", "case-400")
    assert reply.attempts == 1
    assert reply.error.startswith("HTTP 400")
    assert "scripted bad request" in reply.error
    assert len(_requests_for(server, "case-400")) == 1


def test_hang_gives_a_timeout_error_within_the_timeout(server):
    client = LLMClient(base_url=server.base_url, api_key="k", timeout_s=0.5, max_attempts=1)
    started = time.monotonic()
    reply = _ask(client, "hang", "case-hang")
    elapsed = time.monotonic() - started
    client.close()
    assert reply.text == ""
    assert reply.attempts == 1
    assert reply.error.startswith("timeout")
    assert 0.5 <= elapsed < 1.5


def test_hang_is_retried_as_a_transport_error(server):
    client = LLMClient(base_url=server.base_url, api_key="k", timeout_s=0.3, max_attempts=2, backoff_initial_s=0.01)
    reply = _ask(client, "hang", "case-hang-twice")
    client.close()
    assert reply.attempts == 2
    assert reply.error.startswith("timeout")
    assert "2 attempts" in reply.error
    assert len(_requests_for(server, "case-hang-twice")) == 2


def test_slow_answer_latency_is_measured(client):
    reply = _ask(client, "slow", "case-slow")
    assert reply.error == ""
    assert 400 <= reply.latency_ms < 2000


def test_global_latency_applies_to_every_answer():
    with run_llm_server(latency_s=0.25) as server:
        client = LLMClient(base_url=server.base_url, api_key="k", timeout_s=5)
        replies = [client.complete(model="m", system="s", user=f"q{i}") for i in range(3)]
        client.close()
    assert all(r.error == "" for r in replies)
    assert all(250 <= r.latency_ms < 1500 for r in replies)


def test_connection_refused_is_an_error_after_retries():
    with run_llm_server() as server:
        base_url = server.base_url
    # The server is gone: nothing listens on that port any more.
    client = LLMClient(base_url=base_url, api_key="k", timeout_s=1, max_attempts=2, backoff_initial_s=0.01)
    reply = client.complete(model="m", system="s", user="u")
    client.close()
    assert reply.attempts == 2
    assert reply.error.startswith("connection error")


def test_a_rate_limit_timeout_is_returned_as_an_error(server):
    client = LLMClient(base_url=server.base_url, api_key="k", rate_limiter=RefusingLimiter())
    reply = client.complete(model="m", system="s", user="never sent case-refused")
    client.close()
    assert reply.error.startswith("rate limit wait exceeded")
    assert _requests_for(server, "case-refused") == []


def test_model_rate_limits_pick_the_bucket_of_the_model_called(server):
    made: dict[tuple[str, float], CountingLimiter] = {}

    def make(model: str, per_second: float) -> CountingLimiter:
        made[(model, per_second)] = CountingLimiter()
        return made[(model, per_second)]

    limits = ModelRateLimits(make, default_per_second=20, per_model={"big-model": 2})
    client = LLMClient(base_url=server.base_url, api_key="k", model_rate_limits=limits)
    client.complete(model="big-model", system="s", user="a")
    client.complete(model="big-model", system="s", user="b")
    client.complete(model="small-model", system="s", user="c")
    client.complete(model="small-model", system="s", user="d", params={"rate_limit_per_second": 5})
    client.close()
    assert {key: limiter.calls for key, limiter in made.items()} == {
        ("big-model", 2.0): 2,
        ("small-model", 20.0): 1,
        ("small-model", 5.0): 1,
    }


def test_responder_replaces_the_good_answer():
    with run_llm_server(responder=lambda body: '{"rating": 1, "explanation": "custom"}') as server:
        client = LLMClient(base_url=server.base_url, api_key="k")
        reply = client.complete(model="m", system="s", user="u")
        client.close()
    assert json.loads(reply.text) == {"rating": 1, "explanation": "custom"}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "3600"}, 60.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_parsing_prefers_ms_and_caps(headers, expected):
    assert retry_after_seconds(headers, cap_s=60.0) == expected


def test_retry_after_as_http_date():
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 5))
    assert 3.0 <= retry_after_seconds({"retry-after": when}) <= 5.5


def test_only_transport_429_and_5xx_are_retryable():
    assert not is_retryable(ValueError("not an HTTP error"))
    assert not is_retryable(RateLimitTimeout("local"))


def test_latency_leaves_out_the_wait_for_a_rate_limit_slot(server):
    class SlowLimiter:
        def acquire(self) -> None:
            time.sleep(0.5)

    client = LLMClient(base_url=server.base_url, api_key="k", rate_limiter=SlowLimiter())
    client.complete(model="m", system="s", user="warm-up")
    started = time.monotonic()
    reply = client.complete(model="m", system="s", user="queued case-queued")
    waited = time.monotonic() - started
    client.close()
    assert reply.error == ""
    assert waited >= 0.5
    assert reply.latency_ms < 400  # the endpoint answered at once; the half second was our own queue


def test_reply_from_completion_reads_the_first_choice_and_usage():
    body = {
        "choices": [{"message": {"role": "assistant", "content": '{"rating": 2}'}}, {"message": {"content": "x"}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }
    reply = reply_from_completion(json.dumps(body).encode(), latency_ms=40, attempts=2)
    assert reply == LLMReply('{"rating": 2}', 12, 3, 40, 2, "")


@pytest.mark.parametrize(
    ("content", "error", "tokens"),
    [
        (b"<html>bad gateway</html>", "the response is not JSON", (None, None)),
        (b"[1, 2]", "the response is not a chat completion", (None, None)),
        (
            b'{"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 0}}',
            "the response has no message text",
            (5, 0),
        ),
        (b'{"choices": [{"message": {"content": null, "refusal": "no"}}]}', "refused: no", (None, None)),
        (
            b'{"choices": [{"message": {"content": 7}}], "usage": {"prompt_tokens": true}}',
            "the response has no message text",
            (None, None),
        ),
    ],
)
def test_a_body_that_is_not_a_usable_completion_is_an_error_not_an_answer(content, error, tokens):
    reply = reply_from_completion(content, latency_ms=5, attempts=1)
    assert reply.text == ""
    assert reply.error == error
    assert (reply.prompt_tokens, reply.completion_tokens) == tokens
    assert not reply.ok


def test_threads_spread_over_a_few_clients_and_each_keeps_its_own(server):
    """Many threads share CLIENT_SHARDS openai clients (each its own connection pool); a thread keeps
    the one it was given, every call is answered, and close() closes every client made."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from scoring.llm import CLIENT_SHARDS

    llm = LLMClient(base_url=server.base_url, api_key="test-key", timeout_s=5)
    first = llm._openai
    assert llm._openai is first  # the same thread: the same client, nothing new made
    assert sum(client is not None for client in llm._shards) == 1

    seen: dict[int, set[int]] = {}
    lock = threading.Lock()

    def call(n: int) -> str:
        reply = llm.complete(model="m", system="", user=f'Rate turn {n}. Answer {{"rating": 2 | 2}}.')
        with lock:
            seen.setdefault(threading.get_ident(), set()).add(id(llm._openai))
        return reply.text

    with ThreadPoolExecutor(3 * CLIENT_SHARDS) as pool:
        answers = list(pool.map(call, range(12 * CLIENT_SHARDS)))
    assert all(json.loads(text)["rating"] == 2 for text in answers)
    assert all(len(ids) == 1 for ids in seen.values())  # each thread kept one client
    made = [client for client in llm._shards if client is not None]
    assert len(made) == CLIENT_SHARDS and len({id(c) for c in made}) == CLIENT_SHARDS
    assert {i for ids in seen.values() for i in ids} <= {id(c) for c in made}
    llm.close()
    assert all(client._client.is_closed for client in made)

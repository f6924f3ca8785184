"""Tier-2 judge calls: one chat completion through the real `openai` client, with our own retries.

The openai client's built-in retries are off (max_retries=0) because ours must also take a slot
from the shared rate limit before every attempt, and must say how many attempts a call took.
Retried: transport errors (connection refused or reset, timeouts), 429 (after the server's
Retry-After / retry-after-ms, capped) and 5xx, with exponential backoff and jitter. Not retried:
any other 4xx, which will not get better by asking again.

complete() never raises for the endpoint's behaviour: a failed call comes back as an LLMReply with
`error` set and empty text, so the caller can archive it and mark the verdict as an error.
"""

from __future__ import annotations

import email.utils
import itertools
import json
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from scoring.audio import AudioClip, input_audio_part
from scoring.ratelimit import ModelRateLimits, RateLimiter, RateLimitTimeout

# Request parameters passed on to chat.completions.create; anything else in a spec's params
# (repeats, rate_limit_per_second ...) is Tribunal's own and is not sent.
CHAT_PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "response_format",
        "seed",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "reasoning_effort",
        "logit_bias",
    }
)
MAX_RETRY_AFTER_S = 60.0
CHAT_COMPLETIONS_PATH = "/chat/completions"
# The openai clients one LLMClient spreads its threads over, each with its own connection pool. httpx's
# pool looks at every one of its connections, under one lock, at each request and each answer: with a
# sweep's 128 threads on one pool, that was a fifth of a call's CPU (bench/llm_client_cpu.py at 300 ms,
# 128 threads: 2.08 ms a call on one pool, 1.71 on eight; one client per thread cost more again).
CLIENT_SHARDS = 8


def _sdk() -> Any:
    """The openai package, imported on first use: it takes about a second to load, and a process that
    never calls a model (the web process serving pages, most commands) should not pay for it."""
    import openai

    return openai


@dataclass(frozen=True)
class LLMReply:
    """One call's outcome. latency_ms runs from the first attempt to the answer, retries and their
    waits included, but not the time spent queueing for rate-limit slots."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: int
    attempts: int
    error: str = ""  # "" on success
    # The HTTP body as received when it held no answer text (not JSON, no choices, a 4xx/5xx page):
    # archived so a failure can be read later. "" when `text` is the answer.
    body: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def retry_after_seconds(headers: Mapping[str, str] | None, *, cap_s: float = MAX_RETRY_AFTER_S) -> float | None:
    """The wait a 429/5xx response asks for: retry-after-ms, else Retry-After (seconds or HTTP date)."""
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            seconds = float(value) / 1000
        except ValueError:
            seconds = math.nan
        if math.isfinite(seconds) and seconds >= 0:
            return min(seconds, cap_s)
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return cap_s
    return min(max(seconds, 0.0), cap_s)


def is_retryable(error: BaseException) -> bool:
    if isinstance(error, _sdk().APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, _sdk().APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return False


def describe_error(error: BaseException) -> str:
    if isinstance(error, _sdk().APITimeoutError):
        return "timeout: the endpoint did not answer in time"
    if isinstance(error, _sdk().APIConnectionError):
        cause = error.__cause__
        cause_text = f" ({type(cause).__name__}: {cause})" if cause else ""
        return f"connection error: {error.message}{cause_text}"
    if isinstance(error, _sdk().APIStatusError):
        body = error.body
        detail = body.get("message") if isinstance(body, dict) else None
        return f"HTTP {error.status_code}: {detail if isinstance(detail, str) and detail else error.message}"
    if isinstance(error, RateLimitTimeout):
        return f"rate limit wait exceeded: {error}"
    return f"{type(error).__name__}: {error}"


class LLMClient:
    """Chat completions against any OpenAI-compatible endpoint.

    Rate limiting: `rate_limiter` is one bucket for every call of this client; `model_rate_limits`
    picks the bucket of the model called (and honours a `rate_limit_per_second` in params). The
    client is thread-safe: one instance can serve a pool of threads.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        timeout_s: float = 60.0,
        max_attempts: int = 4,
        rate_limiter: RateLimiter | None = None,
        model_rate_limits: ModelRateLimits | None = None,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 20.0,
        retry_after_cap_s: float = MAX_RETRY_AFTER_S,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.rate_limiter = rate_limiter
        self.model_rate_limits = model_rate_limits
        self.retry_after_cap_s = retry_after_cap_s
        self._backoff = wait_exponential_jitter(
            multiplier=backoff_initial_s, max=backoff_max_s, jitter=backoff_initial_s
        )
        self._api_key = api_key
        # Made on first use, one per shard: a client used from one thread makes one.
        self._shards: list[Any] = [None] * CLIENT_SHARDS
        self._shards_lock = threading.Lock()
        self._next_shard = itertools.count()
        self._local = threading.local()

    @property
    def _openai(self) -> Any:
        """This thread's openai client: one of CLIENT_SHARDS, given to threads in turn and kept."""
        client = getattr(self._local, "client", None)
        if client is None:
            shard = next(self._next_shard) % CLIENT_SHARDS
            with self._shards_lock:
                client = self._shards[shard]
                if client is None:
                    client = self._shards[shard] = _sdk().OpenAI(
                        base_url=self.base_url or None,
                        api_key=self._api_key,
                        timeout=_sdk().Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
                        max_retries=0,
                    )
            self._local.client = client
        return client

    def close(self) -> None:
        with self._shards_lock:
            for client in self._shards:
                if client is not None:
                    client.close()

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, _sdk().APIStatusError):
            asked = retry_after_seconds(error.response.headers, cap_s=self.retry_after_cap_s)
            if asked is not None:
                return asked
        return self._backoff(state)

    def limiter_for(self, model: str, params: Mapping[str, Any] | None = None) -> RateLimiter | None:
        if self.model_rate_limits is not None:
            requested = (params or {}).get("rate_limit_per_second")
            return self.model_rate_limits.for_model(model, float(requested) if requested else None)
        return self.rate_limiter

    def _attempt(
        self,
        *,
        limiter: RateLimiter | None,
        queued: list[float],
        body: dict[str, Any],
    ) -> bytes:
        if limiter is not None:
            waiting_since = time.monotonic()
            limiter.acquire()
            queued.append(time.monotonic() - waiting_since)
        # The openai client's own request path (base URL, auth, headers, timeouts, and its error
        # types for 4xx/5xx and transport failures), but the body comes back as bytes: building the
        # typed ChatCompletion (and transforming the request through its TypedDicts) cost as much
        # CPU as the rest of a sweep's work around the call, and four fields are all we read.
        return self._openai.post(CHAT_COMPLETIONS_PATH, body=body, cast_to=bytes)

    def complete(
        self,
        *,
        model: str,
        system: str,
        user: str,
        params: Mapping[str, Any] | None = None,
        audio: AudioClip | None = None,
    ) -> LLMReply:
        messages: list[Any] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": user_content(user, audio)})
        body: dict[str, Any] = {"model": model, "messages": messages}
        body.update(
            (name, value) for name, value in (params or {}).items() if name in CHAT_PARAMS and value is not None
        )

        limiter = self.limiter_for(model, params)
        attempts = 0
        queued: list[float] = []  # time spent waiting for rate-limit slots: ours, not the endpoint's
        started = time.monotonic()

        def elapsed_ms() -> int:
            return max(0, round((time.monotonic() - started - sum(queued)) * 1000))

        def count_attempt(state: RetryCallState) -> None:
            nonlocal attempts
            attempts = state.attempt_number

        retrying = Retrying(
            retry=retry_if_exception(is_retryable),
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            before=count_attempt,
            reraise=True,
        )
        try:
            content = retrying(self._attempt, limiter=limiter, queued=queued, body=body)
        except (_sdk().OpenAIError, RateLimitTimeout) as error:
            message = describe_error(error)
            if attempts > 1:
                message = f"{message} (after {attempts} attempts)"
            return LLMReply("", None, None, elapsed_ms(), attempts, message, body=error_body(error))
        return reply_from_completion(content, latency_ms=elapsed_ms(), attempts=attempts)


def user_content(user: str, audio: AudioClip | None) -> str | list[dict[str, Any]]:
    """The user message's content: the prompt text, or (for a judge that listens) the audio part
    followed by the text, the order EVA's audio judges send them in."""
    if audio is None:
        return user
    return [input_audio_part(audio), {"type": "text", "text": user}]


def error_body(error: BaseException) -> str:
    """The body of a failed HTTP response (a 4xx/5xx page), or "" when no response came back."""
    if isinstance(error, _sdk().APIStatusError):
        try:
            return error.response.text
        except Exception:  # a streamed or closed response: nothing more to keep
            return ""
    return ""


def _body_text(content: bytes | str) -> str:
    return content if isinstance(content, str) else content.decode("utf-8", errors="replace")


def _token_count(usage: Any, name: str) -> int | None:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def reply_from_completion(content: bytes | str, *, latency_ms: int, attempts: int) -> LLMReply:
    """The LLMReply for a chat completion's JSON body: the first choice's text and the token usage.

    A body that is not a completion (not JSON, no choices, no text) is an error naming what is
    missing, never an empty answer.
    """
    try:
        completion = json.loads(content)
    except ValueError:
        return LLMReply("", None, None, latency_ms, attempts, "the response is not JSON", body=_body_text(content))
    if not isinstance(completion, dict):
        problem = "the response is not a chat completion"
        return LLMReply("", None, None, latency_ms, attempts, problem, body=_body_text(content))
    usage = completion.get("usage")
    prompt_tokens = _token_count(usage, "prompt_tokens")
    completion_tokens = _token_count(usage, "completion_tokens")
    choices = completion.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        refusal = message.get("refusal") if isinstance(message, dict) else None
        problem = f"refused: {refusal}" if refusal else "the response has no message text"
        return LLMReply("", prompt_tokens, completion_tokens, latency_ms, attempts, problem, body=_body_text(content))
    return LLMReply(text, prompt_tokens, completion_tokens, latency_ms, attempts, "")

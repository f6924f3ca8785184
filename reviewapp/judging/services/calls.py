"""The LLM call archive and the client built from settings.

Every tier-2 call is archived as a JudgeCall: the exact rendered prompts (stored once per distinct
text, keyed by sha256, in PromptText), the model and parameters, the raw answer (or, when the
endpoint sent no answer, the HTTP body it did send: a non-JSON 200, a 500 page), tokens, latency,
attempts and error. What was received is kept up to JUDGE_CALL_BODY_CAP_BYTES with its full size
and sha256, so a 5 MB answer costs 256 KB here and a verdict keeps only its first few thousand
characters. That is enough to replay the call later and see whether the endpoint still
answers the same way.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.db import transaction

from reviewapp import copy_writes
from reviewapp.judging.services.judge_audio import clip_for_call
from reviewapp.models import JudgeCall, JudgeVersion, PromptText, Sweep
from scoring.llm import LLMClient, LLMReply
from scoring.ratelimit import LocalRateLimiter, ModelRateLimits, RateLimiter
from scoring.ratelimit_slots import RedisSlotReservoir

log = logging.getLogger(__name__)

DEFAULT_RATE_LIMIT_PER_SECOND = 20.0
DEFAULT_RATE_LIMIT_MAX_WAIT_SECONDS = 120.0
# Local endpoints (vLLM, Ollama) take any key, but the openai client insists on one.
PLACEHOLDER_API_KEY = "unused"


def prompt_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_texts_store(*, texts: Iterable[str]) -> dict[str, PromptText]:
    """Get or create a PromptText per distinct text; safe when several workers store the same text.

    The insert ignores conflicts on the unique sha256, then the rows are read back, so two workers
    racing on one prompt both end up with the single row.
    """
    by_hash = {prompt_sha256(text): text for text in texts}
    if not by_hash:
        return {}
    if copy_writes.copy_supported():
        # PostgreSQL: the rows already there (ids only: a prompt is kilobytes), the others written by
        # COPY with fresh ids; when another worker wrote one of them meanwhile, the path below.
        rows = {row.sha256: row for row in PromptText.objects.filter(sha256__in=list(by_hash)).only("id", "sha256")}
        new = [PromptText(sha256=digest, text=text) for digest, text in by_hash.items() if digest not in rows]
        if copy_writes.copy_instances(PromptText, new, new_ids=True):
            rows.update((row.sha256, row) for row in new)
            return {by_hash[digest]: row for digest, row in rows.items()}
    PromptText.objects.bulk_create(
        [PromptText(sha256=digest, text=text) for digest, text in by_hash.items()], ignore_conflicts=True
    )
    rows = {row.sha256: row for row in PromptText.objects.filter(sha256__in=list(by_hash))}
    return {by_hash[digest]: row for digest, row in rows.items()}


def storable_text(text: str) -> str:
    """`text` as a database column can hold it: NUL written as \\u0000 and a lone surrogate as its
    \\udXXX escape (PostgreSQL refuses both); every other character is kept."""
    if "\x00" in text:
        text = text.replace("\x00", "\\u0000")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return text


def received_fields(reply: LLMReply) -> dict[str, Any]:
    """The JudgeCall fields for what came back: the answer text, or the whole HTTP body when it held
    no answer, cut at JUDGE_CALL_BODY_CAP_BYTES (on a character boundary), with the full size and sha256."""
    received = reply.text or reply.body
    encoded = received.encode("utf-8", errors="surrogatepass")
    cap = int(getattr(settings, "JUDGE_CALL_BODY_CAP_BYTES", 256 * 1024))
    kept = encoded[:cap].decode("utf-8", errors="ignore") if len(encoded) > cap else received
    return {
        "raw_response": storable_text(kept),
        "response_bytes": len(encoded),
        "response_sha256": hashlib.sha256(encoded).hexdigest() if encoded else "",
        "response_truncated": len(encoded) > cap,
    }


def verdict_raw_text(text: str, *, archived: bool) -> str:
    """What a verdict keeps of an answer (or of its explanation). With an archived call, a long text
    lives there once: the verdict keeps its first VERDICT_RAW_TEXT_MAX_CHARS characters and says so
    at the end, so pages, exports and people never take the excerpt for the whole answer."""
    limit = int(getattr(settings, "VERDICT_RAW_TEXT_MAX_CHARS", 4000))
    if archived and len(text) > limit:
        text = text[:limit] + CUT_NOTE.format(total=len(text), limit=limit)
    return storable_text(text)


CUT_NOTE = "\n[cut: the first {limit:,} of {total:,} characters; the archived call keeps the answer]"


def call_archive(
    *,
    judge_version: JudgeVersion,
    sweep: Sweep | None,
    system: str,
    user: str,
    model: str,
    params: Mapping[str, Any] | None,
    reply: LLMReply,
) -> JudgeCall:
    """Archive one LLM call (successful or not) with its prompts stored once by hash."""
    with transaction.atomic():
        prompts = prompt_texts_store(texts=[text for text in (system, user) if text] or [user])
        return JudgeCall.objects.create(
            judge_version=judge_version,
            sweep=sweep,
            model=model,
            params=dict(params or {}),
            **answered_call_fields(prompts=prompts, system=system, user=user, reply=reply),
        )


def answered_call_fields(
    *, prompts: Mapping[str, PromptText], system: str, user: str, reply: LLMReply
) -> dict[str, Any]:
    """The JudgeCall fields of one answered call: its prompt rows, taken from `prompts` (what
    prompt_texts_store gave for its texts), what came back, and the reply's usage."""
    return {
        "system_prompt": prompts.get(system) if system else None,
        "user_prompt": prompts[user],
        **received_fields(reply),
        **reply_usage_fields(reply),
    }


def reply_usage_fields(reply: LLMReply) -> dict[str, Any]:
    """What an archived call and a replay keep of a reply besides its text: tokens, latency, attempts, error."""
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "latency_ms": max(0, reply.latency_ms),
        "attempts": max(1, reply.attempts),
        "error": reply.error,
    }


def call_replay(*, call: JudgeCall, client: LLMClient, model: str | None = None) -> tuple[JudgeCall, LLMReply]:
    """Send an archived call again, exactly as it was sent (optionally to another model).

    Returns (the archived call, the new reply). Nothing is written: a replay is a check, not a verdict.
    """
    call = JudgeCall.objects.select_related("system_prompt", "user_prompt", "judge_version__judge").get(pk=call.pk)
    # A listening judge's call is sent with the same audio segment, cut again and checked by its hash.
    audio = clip_for_call(call)
    reply = client.complete(
        model=model or call.model,
        system=call.system_prompt.text if call.system_prompt else "",
        user=call.user_prompt.text,
        params=call.params,
        **({"audio": audio} if audio is not None else {}),
    )
    return call, reply


# --- the client from settings ----------------------------------------------------------------------


def llm_tier_off_reason() -> str:
    """Why the LLM tier is off, in words a user can act on; "" when it is on."""
    if not (settings.OPENAI_BASE_URL or settings.OPENAI_API_KEY):
        return (
            "The LLM tier is off: OPENAI_BASE_URL and OPENAI_API_KEY are not set. Set them to any "
            "OpenAI-compatible endpoint to run LLM judges; signatures still run."
        )
    return ""


def redis_url_for_rate_limits() -> str:
    """REDIS_URL, else the Celery broker when it is Redis; "" when there is no Redis."""
    url = getattr(settings, "REDIS_URL", "") or ""
    if url:
        return url
    broker = getattr(settings, "CELERY_BROKER_URL", "") or ""
    return broker if broker.startswith(("redis://", "rediss://")) else ""


def model_rate_limits_from_settings() -> ModelRateLimits:
    """Per-model limiters: shared through Redis when there is one, else per process.

    Rates: a spec's `rate_limit_per_second`, else settings.LLM_RATE_LIMITS[model], else
    settings.LLM_RATE_LIMIT_PER_SECOND (default 20 requests per second).
    """
    default_rate = float(getattr(settings, "LLM_RATE_LIMIT_PER_SECOND", DEFAULT_RATE_LIMIT_PER_SECOND))
    per_model = dict(getattr(settings, "LLM_RATE_LIMITS", {}) or {})
    max_wait = float(getattr(settings, "LLM_RATE_LIMIT_MAX_WAIT_SECONDS", DEFAULT_RATE_LIMIT_MAX_WAIT_SECONDS))
    redis_url = redis_url_for_rate_limits()
    if redis_url:
        import redis

        connection = redis.Redis.from_url(redis_url, socket_timeout=10, socket_connect_timeout=5)

        def make(model: str, per_second: float) -> RateLimiter:
            return RedisSlotReservoir.for_model(connection, model, per_second=per_second, max_wait_s=max_wait)

    else:

        def make(model: str, per_second: float) -> RateLimiter:
            return LocalRateLimiter(per_second, max_wait_s=max_wait)

    return ModelRateLimits(make, default_per_second=default_rate, per_model=per_model)


_clients: dict[tuple[Any, ...], LLMClient] = {}
_clients_lock = threading.Lock()


def llm_client_from_settings(*, base_url: str | None = None, api_key: str | None = None) -> LLMClient | None:
    """The LLM client for this process, or None when the LLM tier is off (llm_tier_off_reason says why).

    One client per configuration is kept and reused, so its connection pool and rate limiters are
    shared by every task in the worker. `base_url`/`api_key` override the settings (replay_call).
    """
    if base_url is None and api_key is None:
        reason = llm_tier_off_reason()
        if reason:
            log.info(reason)
            return None
    url = base_url if base_url is not None else settings.OPENAI_BASE_URL
    key = api_key if api_key is not None else (settings.OPENAI_API_KEY or PLACEHOLDER_API_KEY)
    timeout = float(settings.OPENAI_TIMEOUT_SECONDS)
    max_attempts = int(getattr(settings, "LLM_MAX_ATTEMPTS", 4))
    cache_key = (
        url,
        key,
        timeout,
        max_attempts,
        redis_url_for_rate_limits(),
        getattr(settings, "LLM_RATE_LIMIT_PER_SECOND", DEFAULT_RATE_LIMIT_PER_SECOND),
        repr(sorted((getattr(settings, "LLM_RATE_LIMITS", {}) or {}).items())),
    )
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            client = LLMClient(
                base_url=url,
                api_key=key,
                timeout_s=timeout,
                max_attempts=max_attempts,
                model_rate_limits=model_rate_limits_from_settings(),
            )
            _clients[cache_key] = client
    return client

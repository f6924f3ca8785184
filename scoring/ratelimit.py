"""Per-model request rate limits for LLM calls.

A provider limits requests per model per account, not per process: ten Celery workers on three
machines must share one budget. RedisRateLimiter keeps that budget in Redis with GCRA (the generic
cell rate algorithm, a token bucket expressed as one timestamp) evaluated by a Lua script, so the
check-and-take step is atomic across every worker. LocalRateLimiter is the same algorithm in one
process; NoRateLimit lets everything through.

Plain Python: the redis client is passed in, nothing here imports Django.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, Self, runtime_checkable

from scoring.errors import TribunalError

KEY_PREFIX = "ratelimit:"


class RateLimitTimeout(TribunalError, TimeoutError):
    """Raised by acquire() when the wait for a free slot would exceed max_wait_s."""


@runtime_checkable
class RateLimiter(Protocol):
    def acquire(self) -> None:
        """Block until one request may be sent."""
        ...


def _check_rate(per_second: float, burst: int) -> None:
    if not per_second > 0 or not math.isfinite(per_second):
        raise ValueError(f"per_second must be a positive number, got {per_second!r}")
    if burst < 1:
        raise ValueError(f"burst must be at least 1, got {burst!r}")


class NoRateLimit:
    """No limit at all (tests, or an endpoint that has none)."""

    def acquire(self) -> None:
        return None


class LocalRateLimiter:
    """GCRA in one process, shared by its threads.

    Requests are spaced 1/per_second apart; `burst` lets that many go at once after an idle spell.
    """

    def __init__(
        self,
        per_second: float,
        *,
        burst: int = 1,
        max_wait_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        _check_rate(per_second, burst)
        self.per_second = per_second
        self.burst = burst
        self.max_wait_s = max_wait_s
        self._interval = 1.0 / per_second
        self._tolerance = self._interval * (burst - 1)
        self._tat = 0.0  # theoretical arrival time of the next request
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep

    def acquire(self) -> None:
        # Reserve a slot under the lock, then sleep outside it until the slot comes.
        with self._lock:
            now = self._clock()
            tat = max(self._tat, now)
            allowed_at = tat - self._tolerance
            wait = max(0.0, allowed_at - now)
            if self.max_wait_s is not None and wait > self.max_wait_s:
                raise RateLimitTimeout(f"local rate limit: next slot in {wait:.2f}s, more than {self.max_wait_s}s")
            self._tat = tat + self._interval
        if wait > 0:
            self._sleep(wait)


# How every bucket script starts. KEYS[1]: the bucket key. ARGV[1]: emission interval in
# microseconds. ARGV[2]: burst tolerance in microseconds. `now` is Redis' clock in microseconds, the
# single clock for all workers; `tat` the bucket's theoretical arrival time, never before now.
_GCRA_LUA_HEAD = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000000 + tonumber(now_parts[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then
  tat = now
end
"""

# The rest of RedisRateLimiter's script. Returns {wait, now}: wait 0 when the request may go now (the
# slot is taken), else the microseconds to wait before asking again (nothing is taken).
_GCRA_LUA = """
local allowed_at = tat - tolerance
if now < allowed_at then
  return {math.ceil(allowed_at - now), now}
end
local new_tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1000)
return {0, now}
"""


class RedisGcraBucket:
    """A GCRA bucket in Redis under `ratelimit:<model>`, shared by every process using the key.

    The base of both Redis limiters (RedisRateLimiter here, RedisSlotReservoir in ratelimit_slots):
    the same key, rate and burst make the same bucket, so the two can share one budget. A subclass
    gives the rest of its Lua script in `lua`; the script is called with the key, then the interval and
    tolerance in microseconds and the subclass's own arguments.
    """

    lua: str  # the script after _GCRA_LUA_HEAD, which reads the clock, the rate and the bucket

    def __init__(
        self,
        client: Any,
        *,
        key: str,
        per_second: float,
        burst: int = 1,
        max_wait_s: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        _check_rate(per_second, burst)
        if not key:
            raise ValueError("a rate limit key (the model name) is required")
        self.client = client
        self.key = key if key.startswith(KEY_PREFIX) else f"{KEY_PREFIX}{key}"
        self.per_second = per_second
        self.burst = burst
        self.max_wait_s = max_wait_s
        self._interval_us = max(1, round(1_000_000 / per_second))
        self._tolerance_us = self._interval_us * (burst - 1)
        self._script = client.register_script(_GCRA_LUA_HEAD + self.lua)
        self._sleep = sleep

    @classmethod
    def for_model(cls, client: Any, model: str, *, per_second: float, **options: Any) -> Self:
        return cls(client, key=f"{KEY_PREFIX}{model}", per_second=per_second, **options)

    def reset(self) -> None:
        """Forget the bucket's state (tests, or after changing the rate)."""
        self.client.delete(self.key)


class RedisRateLimiter(RedisGcraBucket):
    """GCRA in Redis: every process using the same key shares one rate.

    `key` is the model name or a full key; it is stored under `ratelimit:<model>`. acquire() sleeps
    until a slot is free and raises RateLimitTimeout once it has waited max_wait_s in total.
    """

    lua = _GCRA_LUA

    def _try(self) -> tuple[float, float]:
        wait_us, now_us = self._script(keys=[self.key], args=[self._interval_us, self._tolerance_us])
        return int(wait_us) / 1_000_000, int(now_us) / 1_000_000

    def try_acquire(self) -> float:
        """Take a slot if one is free: 0.0, else the seconds until the next one (nothing taken)."""
        return self._try()[0]

    def acquire(self) -> None:
        self.acquire_at()

    def acquire_at(self) -> float:
        """acquire(), returning the Redis clock time (epoch seconds) at which the slot was granted."""
        started = time.monotonic()
        while True:
            wait, now = self._try()
            if wait <= 0:
                return now
            waited = time.monotonic() - started
            if waited + wait > self.max_wait_s:
                raise RateLimitTimeout(
                    f"rate limit {self.key}: next slot in {wait:.2f}s after waiting {waited:.2f}s "
                    f"(max {self.max_wait_s}s)"
                )
            # A little jitter so workers woken for the same slot do not all ask at the same instant.
            self._sleep(wait + random.uniform(0, min(0.01, self._interval_us / 4_000_000)))


class ModelRateLimits:
    """One limiter per model (a provider limits each model separately), made on first use.

    `make(model, per_second)` builds a limiter, e.g. a RedisRateLimiter keyed `ratelimit:<model>`.
    The rate is the one asked for by the call (a spec's `rate_limit_per_second`), else the model's
    entry in `per_model`, else `default_per_second`.
    """

    def __init__(
        self,
        make: Callable[[str, float], RateLimiter],
        *,
        default_per_second: float,
        per_model: Mapping[str, float] | None = None,
    ) -> None:
        _check_rate(default_per_second, 1)
        self._make = make
        self.default_per_second = default_per_second
        self.per_model = dict(per_model or {})
        self._limiters: dict[tuple[str, float], RateLimiter] = {}
        self._lock = threading.Lock()

    def rate_for(self, model: str, requested: float | None = None) -> float:
        if requested is not None:
            return float(requested)
        return float(self.per_model.get(model, self.default_per_second))

    def for_model(self, model: str, per_second: float | None = None) -> RateLimiter:
        rate = self.rate_for(model, per_second)
        with self._lock:
            limiter = self._limiters.get((model, rate))
            if limiter is None:
                limiter = self._limiters[(model, rate)] = self._make(model, rate)
        return limiter

"""A shared per-model rate limit that reserves its slots ahead, a few at a time, instead of polling.

RedisRateLimiter asks Redis for one slot and, when the bucket is ahead, sleeps and asks again: with
a hundred threads waiting on one model, most of their round trips are refusals, and each costs the
worker CPU (at 2,000 requests per second, more than the LLM call itself). RedisSlotReservoir keeps
the same GCRA bucket (the same key and value, so both can share one budget) but reserves: one script
call takes the next `count` slots, at most `horizon_s` of the rate ahead, and says when each may go.
The process hands them to its threads in order, and a thread sleeps until its slot: no refusal, no
retry, and one round trip for many calls.

A slot not used within one interval of its time is dropped, never sent late: it was counted in the
shared bucket at its own time. At most `horizon_s` of the rate is lost when a process stops asking.

Plain Python: the redis client is passed in, nothing here imports Django.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from scoring.ratelimit import RateLimitTimeout, RedisGcraBucket

# The rest of RedisSlotReservoir's script. ARGV[3] and ARGV[4]: the max wait (microseconds) and how
# many slots to reserve. Returns {count, first, now}: `count` slots were taken, the first may go at
# `first` and each next one an interval later (Redis clock, microseconds); count 0 when the first slot
# is more than the max wait away (nothing is taken).
_RESERVE_LUA = """
local max_wait = tonumber(ARGV[3])
local count = tonumber(ARGV[4])
local first = tat - tolerance
if first < now then
  first = now
end
if first - now > max_wait then
  return {0, string.format('%.0f', first), string.format('%.0f', now)}
end
local new_tat = tat + interval * count
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1000)
return {count, string.format('%.0f', first), string.format('%.0f', now)}
"""


class RedisSlotReservoir(RedisGcraBucket):
    """GCRA in Redis, shared by every process on the key, with slots reserved a batch at a time."""

    lua = _RESERVE_LUA

    def __init__(
        self,
        client: Any,
        *,
        horizon_s: float = 0.05,
        max_batch: int = 32,
        clock: Callable[[], float] = time.monotonic,
        **bucket: Any,
    ) -> None:
        """`bucket`: RedisGcraBucket's key, per_second, burst, max_wait_s and sleep."""
        super().__init__(client, **bucket)
        self.interval_s = 1.0 / self.per_second
        # Enough slots per round trip to cover `horizon_s` of the rate (1 at low rates: exact sharing).
        self.batch = max(1, min(max_batch, int(self.per_second * horizon_s)))
        self._slots: deque[float] = deque()  # when each reserved slot may go, on this process's clock
        self._lock = threading.Lock()
        self._clock = clock
        self.round_trips = 0

    def _reserve(self) -> None:
        """Take the next batch of slots from Redis (called under the lock)."""
        asked_at = self._clock()
        count, first_us, now_us = self._script(
            keys=[self.key], args=[self._interval_us, self._tolerance_us, round(self.max_wait_s * 1e6), self.batch]
        )
        self.round_trips += 1
        count, first_us, now_us = int(count), int(first_us), int(now_us)
        wait = (first_us - now_us) / 1_000_000
        if count == 0:
            raise RateLimitTimeout(f"rate limit {self.key}: next slot in {wait:.2f}s (max {self.max_wait_s}s)")
        first = asked_at + wait
        self._slots.extend(first + i * self._interval_us / 1_000_000 for i in range(count))

    def acquire(self) -> float:
        """Block until this process's next reserved slot comes (reserving more when none is left); the
        slot's moment on this limiter's clock."""
        with self._lock:
            now = self._clock()
            while self._slots and self._slots[0] < now - self.interval_s:
                self._slots.popleft()  # its time has passed: sending now could exceed the shared rate
            if not self._slots:
                self._reserve()
            at = self._slots.popleft()
        wait = at - self._clock()
        if wait > 0:
            self._sleep(wait)
        return at

    def reset(self) -> None:
        """Forget the bucket's state and this process's reserved slots (tests, or after changing the rate)."""
        with self._lock:
            self._slots.clear()
        super().reset()

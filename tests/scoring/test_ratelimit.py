"""LocalRateLimiter, NoRateLimit and ModelRateLimits: in-process rate limits."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from scoring.ratelimit import (
    LocalRateLimiter,
    ModelRateLimits,
    NoRateLimit,
    RateLimiter,
    RateLimitTimeout,
    RedisRateLimiter,
)
from tests.fake_clock import FakeClock


def test_local_limiter_spaces_requests_by_the_interval():
    clock = FakeClock()
    limiter = LocalRateLimiter(4, clock=clock, sleep=clock.sleep)
    granted = []
    for _ in range(5):
        limiter.acquire()
        granted.append(clock.now)
    assert [round(b - a, 6) for a, b in itertools.pairwise(granted)] == [0.25] * 4


def test_local_limiter_burst_lets_that_many_through_after_idle():
    clock = FakeClock()
    limiter = LocalRateLimiter(2, burst=3, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        limiter.acquire()
    assert clock.slept == []
    limiter.acquire()
    assert clock.slept == [pytest.approx(0.5)]


def test_local_limiter_does_not_bank_idle_time_beyond_the_burst():
    clock = FakeClock()
    limiter = LocalRateLimiter(10, clock=clock, sleep=clock.sleep)
    limiter.acquire()
    clock.now += 60  # a long idle spell
    limiter.acquire()
    limiter.acquire()
    assert clock.slept == [pytest.approx(0.1)]


def test_local_limiter_max_wait_raises():
    clock = FakeClock()
    limiter = LocalRateLimiter(1, max_wait_s=0.5, clock=clock, sleep=clock.sleep)
    limiter.acquire()
    with pytest.raises(RateLimitTimeout):
        limiter.acquire()


def test_local_limiter_holds_the_rate_across_threads_in_real_time():
    limiter = LocalRateLimiter(40)
    granted: list[float] = []
    lock = threading.Lock()

    def worker():
        for _ in range(5):
            limiter.acquire()
            with lock:
                granted.append(time.monotonic())

    threads = [threading.Thread(target=worker) for _ in range(4)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    granted.sort()
    # 20 requests at 40/s: the last may go no earlier than 19 intervals after the start, however the
    # threads interleave. (How the slots are spaced within that time is asserted on a fake clock above:
    # on a loaded machine a thread can wake late and bunch with the next, which says nothing about the
    # limiter.)
    assert granted[-1] - started >= 19 / 40 - 0.01
    # And the second half of the requests cannot have been granted before half the time had passed.
    assert granted[10] - started >= 10 / 40 - 0.01


def test_no_rate_limit_never_waits():
    limiter = NoRateLimit()
    started = time.monotonic()
    for _ in range(1000):
        limiter.acquire()
    assert time.monotonic() - started < 0.5


def test_limiters_satisfy_the_protocol():
    assert isinstance(NoRateLimit(), RateLimiter)
    assert isinstance(LocalRateLimiter(1), RateLimiter)


@pytest.mark.parametrize(("rate", "burst"), [(0, 1), (-1, 1), (float("inf"), 1), (1, 0)])
def test_bad_rates_are_refused(rate, burst):
    with pytest.raises(ValueError):
        LocalRateLimiter(rate, burst=burst)


def test_redis_limiter_key_is_prefixed_once():
    class Client:
        def register_script(self, script):
            return lambda keys, args: [0, 1]

    assert RedisRateLimiter(Client(), key="gpt-4o", per_second=5).key == "ratelimit:gpt-4o"
    assert RedisRateLimiter(Client(), key="ratelimit:gpt-4o", per_second=5).key == "ratelimit:gpt-4o"
    assert RedisRateLimiter.for_model(Client(), "m", per_second=5).key == "ratelimit:m"


def test_redis_limiter_sleeps_the_wait_it_is_told_then_times_out():
    answers = iter([[250_000, 1], [0, 2], [400_000, 3]])
    slept: list[float] = []

    class Client:
        def register_script(self, script):
            assert "redis.call('TIME')" in script
            return lambda keys, args: next(answers)

    limiter = RedisRateLimiter(Client(), key="m", per_second=4, max_wait_s=0.3, sleep=slept.append)
    limiter.acquire()  # told to wait 0.25 s, then granted
    assert len(slept) == 1 and 0.25 <= slept[0] < 0.27
    with pytest.raises(RateLimitTimeout):
        limiter.acquire()  # 0.4 s is more than the 0.3 s it may wait


def test_model_rate_limits_make_one_limiter_per_model_and_rate():
    made: list[tuple[str, float]] = []

    def make(model, per_second):
        made.append((model, per_second))
        return NoRateLimit()

    limits = ModelRateLimits(make, default_per_second=20, per_model={"slow-model": 1})
    a = limits.for_model("fast-model")
    assert limits.for_model("fast-model") is a
    limits.for_model("slow-model")
    limits.for_model("fast-model", 3)
    assert made == [("fast-model", 20.0), ("slow-model", 1.0), ("fast-model", 3.0)]

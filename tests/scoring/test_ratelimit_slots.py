"""RedisSlotReservoir without Redis: batches of reserved slots, handed out in order, never late."""

from __future__ import annotations

import pytest

from scoring.ratelimit import RateLimitTimeout
from scoring.ratelimit_slots import RedisSlotReservoir
from tests.fake_clock import FakeClock


class ScriptedRedis:
    """Answers the reserve script from a list of (count, first_us, now_us), recording its arguments."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls: list[tuple[list, list]] = []
        self.deleted: list[str] = []

    def register_script(self, script):
        assert "redis.call('TIME')" in script and "interval * count" in script

        def run(keys, args):
            self.calls.append((keys, args))
            return self.answers.pop(0)

        return run

    def delete(self, key):
        self.deleted.append(key)


def test_one_round_trip_reserves_a_batch_spaced_by_the_interval():
    clock = FakeClock()
    redis = ScriptedRedis([[5, 1_000_000, 1_000_000]])
    limiter = RedisSlotReservoir(redis, key="m", per_second=100, horizon_s=0.05, clock=clock, sleep=clock.sleep)
    assert limiter.batch == 5 and limiter.key == "ratelimit:m"
    sent_at = []
    for _ in range(5):
        limiter.acquire()
        sent_at.append(clock.now)
    assert len(redis.calls) == 1
    keys, args = redis.calls[0]
    assert keys == ["ratelimit:m"] and args == [10_000, 0, 120_000_000, 5]
    assert sent_at == pytest.approx([100.0, 100.01, 100.02, 100.03, 100.04])


def test_it_waits_for_the_first_slot_redis_gives():
    clock = FakeClock()
    redis = ScriptedRedis([[2, 1_250_000, 1_000_000]])  # the bucket is 0.25 s ahead
    limiter = RedisSlotReservoir(redis, key="m", per_second=40, clock=clock, sleep=clock.sleep)
    limiter.acquire()
    assert clock.slept == pytest.approx([0.25])


def test_slots_whose_time_has_passed_are_dropped_not_sent_late():
    clock = FakeClock()
    redis = ScriptedRedis([[4, 1_000_000, 1_000_000], [4, 9_000_000, 9_000_000]])
    limiter = RedisSlotReservoir(redis, key="m", per_second=80, clock=clock, sleep=clock.sleep)
    limiter.acquire()  # slot 0 of the first batch
    clock.now += 5.0  # idle: the other three slots are long past
    limiter.acquire()
    assert len(redis.calls) == 2  # a fresh batch, not a stale slot
    assert clock.slept == []


def test_low_rates_reserve_one_slot_at_a_time():
    limiter = RedisSlotReservoir(ScriptedRedis([]), key="m", per_second=5)
    assert limiter.batch == 1
    assert RedisSlotReservoir(ScriptedRedis([]), key="m", per_second=5000, max_batch=32).batch == 32


def test_a_first_slot_beyond_the_max_wait_raises_and_takes_nothing():
    clock = FakeClock()
    redis = ScriptedRedis([[0, 4_000_000, 1_000_000]])
    limiter = RedisSlotReservoir(redis, key="m", per_second=10, max_wait_s=2, clock=clock, sleep=clock.sleep)
    with pytest.raises(RateLimitTimeout, match=r"3\.00s"):
        limiter.acquire()
    assert clock.slept == []


def test_reset_forgets_the_bucket_and_the_reserved_slots():
    clock = FakeClock()
    redis = ScriptedRedis([[3, 1_000_000, 1_000_000], [3, 2_000_000, 2_000_000]])
    limiter = RedisSlotReservoir(redis, key="m", per_second=60, clock=clock, sleep=clock.sleep)
    limiter.acquire()
    limiter.reset()
    limiter.acquire()
    assert redis.deleted == ["ratelimit:m"] and len(redis.calls) == 2

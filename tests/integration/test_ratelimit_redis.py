"""RedisRateLimiter against the real Redis: threads and processes share one rate and never exceed it.

Uses Redis database 15 (TEST_REDIS_URL overrides) with a fresh key per test. When Redis is down the
tests skip, naming the address; with TRIBUNAL_REQUIRE_SERVICES=1 (or CI=true) they fail instead.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
import uuid

import pytest
import redis

from scoring.ratelimit import RateLimitTimeout, RedisRateLimiter
from tests.integration import harness


@pytest.fixture(scope="module")
def redis_url() -> str:
    url = harness.redis_url()
    problem = harness.redis_problem(url)
    if problem:
        if harness.services_required():
            pytest.fail(f"Redis is required (TRIBUNAL_REQUIRE_SERVICES=1 or CI=true): {problem}")
        pytest.skip(problem)
    return url


@pytest.fixture
def key(redis_url):
    name = f"ratelimit:test-{uuid.uuid4().hex}"
    yield name
    connection = redis.Redis.from_url(redis_url)
    connection.delete(name)
    connection.close()


def _max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    most, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] >= window:
            start += 1
        most = max(most, end - start + 1)
    return most


def run_workers(kind: str, redis_url: str, key: str, *, per_second: float, processes: int, threads: int, each: int):
    """`processes` processes of tests/integration/ratelimit_worker.py on a `kind` limiter ("bucket",
    "reservoir"), all starting 3 s from now (every process is up by then, so they all compete from the
    start); the JSON each printed."""
    start_at = time.time() + 3.0
    command = [sys.executable, "-m", "tests.integration.ratelimit_worker", kind, redis_url, key]
    workers = [
        subprocess.Popen(
            [*command, *map(str, (per_second, threads, each, start_at))],
            cwd=harness.PROJECT_DIR,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    printed = []
    for worker in workers:
        stdout, _ = worker.communicate(timeout=90)
        assert worker.returncode == 0
        printed.append(json.loads(stdout))
    return printed


def test_ten_workers_in_five_processes_never_exceed_the_shared_rate(redis_url, key):
    per_second, processes, threads, each = 40.0, 5, 2, 10  # 100 slots at 40/s: about 2.5 s
    shape = {"per_second": per_second, "processes": processes, "threads": threads, "each": each}
    granted = [at for grants in run_workers("bucket", redis_url, key, **shape) for at in grants]
    assert len(granted) == processes * threads * each
    granted.sort()
    # By Redis' clock, which all workers share, no two slots were granted closer than 1/rate.
    interval = 1 / per_second
    gaps = [b - a for a, b in itertools.pairwise(granted)]
    assert min(gaps) >= interval - 2e-6
    assert _max_in_window(granted, 1.0) <= per_second
    # And the limiter kept up with the rate rather than throttling far below it.
    span = granted[-1] - granted[0]
    assert span < (len(granted) - 1) * interval * 1.5


def test_threads_in_one_process_share_the_bucket(redis_url, key):
    connection = redis.Redis.from_url(redis_url)
    limiters = [RedisRateLimiter(connection, key=key, per_second=20) for _ in range(4)]
    granted: list[float] = []
    lock = threading.Lock()

    def run(limiter: RedisRateLimiter) -> None:
        for _ in range(5):
            at = limiter.acquire_at()
            with lock:
                granted.append(at)

    pool = [threading.Thread(target=run, args=(limiter,)) for limiter in limiters]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    connection.close()
    granted.sort()
    assert len(granted) == 20
    assert min(b - a for a, b in itertools.pairwise(granted)) >= 1 / 20 - 2e-6


def test_burst_then_the_steady_rate(redis_url, key):
    connection = redis.Redis.from_url(redis_url)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)

    limiter = RedisRateLimiter(connection, key=key, per_second=10, burst=5, sleep=sleep)
    burst = [limiter.acquire_at() for _ in range(5)]
    assert slept == []  # the burst went at once
    steady = [limiter.acquire_at() for _ in range(3)]
    connection.close()
    assert len(slept) >= 3  # then each slot was waited for
    assert steady[-1] - burst[0] >= 0.3 - 2e-6  # one slot per 100 ms after the burst of 5


def test_models_have_separate_buckets(redis_url, key):
    connection = redis.Redis.from_url(redis_url)
    slow = RedisRateLimiter(connection, key=key, per_second=1)
    other = RedisRateLimiter(connection, key=f"{key}-other", per_second=1)
    slow.acquire()
    assert slow.try_acquire() > 0.5  # this model's next slot is about a second away
    assert other.try_acquire() == 0.0  # another model is not held back
    connection.delete(other.key)
    connection.close()


def test_acquire_gives_up_after_max_wait(redis_url, key):
    connection = redis.Redis.from_url(redis_url)
    limiter = RedisRateLimiter(connection, key=key, per_second=0.5, max_wait_s=0.3)
    limiter.acquire()
    started = time.monotonic()
    with pytest.raises(RateLimitTimeout, match=key):
        limiter.acquire()
    assert time.monotonic() - started < 0.3  # it does not sleep when the wait is already too long
    connection.close()


def test_the_key_expires_once_idle(redis_url, key):
    connection = redis.Redis.from_url(redis_url)
    RedisRateLimiter(connection, key=key, per_second=10).acquire()
    ttl_ms = connection.pttl(key)
    connection.close()
    assert 0 < ttl_ms <= 1100  # nothing lingers in Redis after the model stops being called


def test_llm_client_calls_are_spaced_by_the_shared_limit(redis_url, key):
    from scoring.llm import LLMClient
    from tests.llm_server import run_llm_server

    connection = redis.Redis.from_url(redis_url)
    with run_llm_server() as server:
        clients = [
            LLMClient(
                base_url=server.base_url, api_key="k", rate_limiter=RedisRateLimiter(connection, key=key, per_second=10)
            )
            for _ in range(3)
        ]
        for client in clients:  # open each client's connection, so arrivals measure the limiter alone
            assert client.complete(model="m", system="s", user="warm-up").error == ""
        server.request_times.clear()

        def run(client: LLMClient) -> None:
            for i in range(4):
                client.complete(model="m", system="s", user=f"u{i}")

        pool = [threading.Thread(target=run, args=(client,)) for client in clients]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        arrivals = sorted(server.request_times)
        for client in clients:
            client.close()
    connection.close()
    assert len(arrivals) == 12
    # 12 requests at 10/s reach the server over about 11 intervals and about 5 per half second; the
    # slack is for scheduling on a busy machine (the exact spacing is checked by Redis' clock above).
    assert arrivals[-1] - arrivals[0] >= 1.1 - 0.3
    assert _max_in_window(arrivals, 0.5) <= 5 + 2


def test_reserved_slots_hold_the_shared_rate_across_processes_and_use_90_percent_of_it(redis_url, key):
    per_second, processes, threads, each = 200.0, 4, 8, 20  # 640 slots at 200/s: about 3.2 s
    shape = {"per_second": per_second, "processes": processes, "threads": threads, "each": each}
    results = run_workers("reservoir", redis_url, key, **shape)
    released = [at for result in results for at in result["released"]]
    round_trips = sum(result["round_trips"] for result in results)
    total = processes * threads * each
    assert len(released) == total
    # A round trip reserves 10 slots (50 ms of the rate), so far fewer trips than slots.
    assert round_trips <= total / 10 + processes * 2
    # The slots the limiter handed out are never above the rate in any second, across all processes.
    slots = [at for result in results for at in result["slots"]]
    assert len(slots) == total
    assert _max_in_window(slots, 1.0) <= per_second * 1.05
    # Nor, but for threads the machine woke late (a busy CI host wakes some by 10-50 ms and bunches them
    # with the next second's), the moments the slots were released.
    assert _max_in_window(released, 1.0) <= per_second * 1.10
    # And close to it: all slots went out in at most 1/0.9 of the time the rate allows.
    span = max(released) - min(released)
    assert span <= (total - 1) / per_second / 0.9
